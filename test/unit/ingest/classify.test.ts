import { describe, expect, test } from 'vitest';
import { Bit, classify } from '../../../src/ingest/classify.js';
import { chooseType, Inference, isHeaderRow } from '../../../src/ingest/infer.js';

/** What a day fits besides its layout: a date, midnight, at any clock. */
const DAY = Bit.Date | Bit.Timestamp | Bit.Clock24 | Bit.Clock12;

const typeOf = (...values: (string | null)[]) => {
  const inf = new Inference();
  for (const v of values) inf.add([v]);
  return inf.types()[0];
};

describe('classify', () => {
  test('numbers: canonical integers, int8 bounds, decimals, exponents', () => {
    expect(classify('42') & Bit.Bigint).toBeTruthy();
    expect(classify('007')).toBe(0);
    expect(classify('9223372036854775807') & Bit.Bigint).toBeTruthy();
    expect(classify('9223372036854775808') & Bit.Bigint).toBe(0);
    expect(classify('1.5') & Bit.Double).toBeTruthy();
    expect(classify('1e400')).toBe(Bit.NumericAny | Bit.Bare);
    expect(classify('1,234')).toBe(Bit.Bigint | Bit.NumericInt | Bit.Double | Bit.NumericAny | Bit.Grouped);
    expect(classify('1,23')).toBe(0);
    expect(classify('$5')).toBe(0);
    expect(classify(' 42')).toBe(0);
    expect(classify('NaN')).toBe(0);
  });
  test('dates and timestamps are validated as calendar days and clock times', () => {
    expect(classify('2024-02-29') & Bit.Date).toBeTruthy();
    expect(classify('2023-02-29')).toBe(0);
    expect(classify('2024-01-01T24:00:00')).toBe(0);
    expect(classify('2024-01-01T10:00:00+02:00')).toBe(Bit.TimestampTz | Bit.Iso | Bit.Clock24);
    expect(classify('01/02/2024')).toBe(DAY | Bit.MdySlash | Bit.DmySlash);
    expect(classify('13/02/2024')).toBe(DAY | Bit.DmySlash);
  });
  test('booleans and JSON', () => {
    expect(classify('YES')).toBe(Bit.Boolean);
    expect(classify('y')).toBe(0);
    expect(classify('{"a":1}')).toBe(Bit.Json);
    expect(classify('{"a":"\\u0000"}')).toBe(0);
  });
});

describe('inference', () => {
  test('the most specific type every value fits', () => {
    expect(typeOf('1', '2', null)).toEqual({ type: 'bigint' });
    expect(typeOf('1', '2.5')).toEqual({ type: 'double precision' });
    expect(typeOf('99999999999999999999', '2.5')).toEqual({ type: 'numeric' });
    expect(typeOf('1', 'x')).toEqual({ type: 'text' });
    expect(typeOf(null, null)).toEqual({ type: 'text' });
    expect(typeOf('2024-01-01', '2024-01-01 10:00:00')).toEqual({ type: 'timestamp without time zone' });
    expect(typeOf('01/02/2024', '13/02/2024')).toEqual({ type: 'date', written: { layout: 'DD/MM/YYYY' } });
    expect(typeOf('01/02/2024', '02/03/2024')).toEqual({ type: 'text', ambiguous: ['MM/DD/YYYY', 'DD/MM/YYYY'] });
    expect(chooseType(0, true)).toEqual({ type: 'text' });
  });
  test('header rule', () => {
    expect(isHeaderRow(['id', 'name'], [{ type: 'bigint' }, { type: 'text' }], [false, false])).toBe(true);
    expect(isHeaderRow(['1', 'name'], [{ type: 'bigint' }, { type: 'text' }], [false, false])).toBe(false);
    expect(isHeaderRow(['a', 'a'], [{ type: 'bigint' }, { type: 'text' }], [false, false])).toBe(false);
    expect(isHeaderRow(['city', 'country'], [{ type: 'text' }, { type: 'text' }], [false, false])).toBe(true);
    expect(isHeaderRow(['Paris', 'France'], [{ type: 'text' }, { type: 'text' }], [false, true])).toBe(false);
  });
});
