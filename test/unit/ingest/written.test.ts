/**
 * Dates, timestamps and numbers as people write them (written.ts, classify.ts, infer.ts,
 * convert.ts): what each layout accepts and refuses, what a column of them becomes, and the text
 * Postgres is given for each value. The values stored are checked against Postgres itself in
 * test/integration/ingest-written.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { Bit, classify } from '../../../src/ingest/classify.js';
import { castSql, readable, rewriterOf } from '../../../src/ingest/convert.js';
import { Inference } from '../../../src/ingest/infer.js';
import { exampleOf, GROUPED, writtenDateBits } from '../../../src/ingest/written.js';

const DAY = Bit.Date | Bit.Timestamp | Bit.Clock24 | Bit.Clock12;
const TS24 = Bit.Timestamp | Bit.Clock24;
const TS12 = Bit.Timestamp | Bit.Clock12;
const TZ24 = Bit.TimestampTz | Bit.Clock24;
const TZ12 = Bit.TimestampTz | Bit.Clock12;
const INT = Bit.Bigint | Bit.NumericInt | Bit.Double | Bit.NumericAny;
const DEC = Bit.Double | Bit.NumericAny;

const typeOf = (...values: (string | null)[]) => {
  const inf = new Inference();
  for (const v of values) inf.add([v]);
  return inf.types()[0];
};

describe('date layouts', () => {
  test.each([
    ['2000/01/31', DAY | Bit.YmdSlash],
    ['2015/1/5', DAY | Bit.YmdSlash],
    ['01/31/2000', DAY | Bit.MdySlash],
    ['31/01/2000', DAY | Bit.DmySlash],
    ['1/2/2000', DAY | Bit.MdySlash | Bit.DmySlash],
    ['31.01.2000', DAY | Bit.DmyDot],
    ['01-31-2000', DAY | Bit.MdyDash],
    ['31-01-2000', DAY | Bit.DmyDash],
    ['Jan 31 2000', DAY | Bit.MonDY],
    ['Jan 1 2000', DAY | Bit.MonDY],
    ['jan 01 2000', DAY | Bit.MonDY],
    ['SEPT 3 2012', DAY | Bit.MonDY],
    ['September 3 2012', DAY | Bit.MonDY],
    ['January 31, 2000', DAY | Bit.MonDCommaY],
    ['May 3, 2012', DAY | Bit.MonDCommaY],
    ['31 Jan 2000', DAY | Bit.DMonY],
    ['1 December 1999', DAY | Bit.DMonY],
    ['31-Jan-2000', DAY | Bit.DMonYDash],
    ['1-jan-2000', DAY | Bit.DMonYDash],
  ])('%s', (text, bits) => {
    expect(classify(text)).toBe(bits);
  });

  test.each([
    ['2001/01/01 06:55', TS24 | Bit.YmdSlash],
    ['2015/01/01 01:00:00', TS24 | Bit.YmdSlash],
    ['2015/01/01 23:59:59.999999', TS24 | Bit.YmdSlash],
    ['2015/01/01 0:00:00.123456789', TS24 | Bit.YmdSlash],
    ['Jan 1 2000 12:00 AM', TS12 | Bit.MonDY],
    ['Jan 1 2000 12:00 pm', TS12 | Bit.MonDY],
    ['Jan 1 2000 1:05:09PM', TS12 | Bit.MonDY],
    ['31/01/2000 13:30', TS24 | Bit.DmySlash],
    ['01/02/2000 1:30 PM', TS12 | Bit.MdySlash | Bit.DmySlash],
    ['2015/01/01 01:00:00Z', TZ24 | Bit.YmdSlash],
    ['2015/01/01 01:00:00 Z', TZ24 | Bit.YmdSlash],
    ['2015/01/01 01:00:00+05:30', TZ24 | Bit.YmdSlash],
    ['2015/01/01 01:00 -0800', TZ24 | Bit.YmdSlash],
    ['31 Jan 2000 1:30 PM +01', TZ12 | Bit.DMonY],
    ['January 31, 2000 1:30PM -03:00', TZ12 | Bit.MonDCommaY],
  ])('%s', (text, bits) => {
    expect(classify(text)).toBe(bits);
  });

  test.each([
    'Feb 29 2023', '29/02/2023', '2023/02/29', 'Apr 31 2000', '31.04.2000', '0000/01/01', 'Jan 1 0000',
    'Jan 1 00', 'Jan 1 20000', '1/2/24', 'Jan 32 2000', 'Jan 0 2000', 'Jon 1 2000', 'Janu 1 2000', 'Sep. 1 2000', 'Jan  1 2000', 'Jan 1  2000',
    'Jan 1,2000', '1 Jan, 2000', '01-Jan 2000', '01 Jan-2000', '31.01-2000', '2000/01-31', '2000.01.31', '2000/001/31',
    'Jan 1 2000 24:00', 'Jan 1 2000 23:60', 'Jan 1 2000 23:59:60', 'Jan 1 2000 0:00 AM', 'Jan 1 2000 13:00 PM', 'Jan 1 2000 1:5 PM',
    'Jan 1 2000 1:05 P', 'Jan 1 2000 1:05 PMX', 'Jan 1 2000 10:00 +16:00', 'Jan 1 2000 10:00 +02:60', 'Jan 1 2000 10:00 +2',
    'Jan 1 2000 10:00 +02:0', 'Jan 1 2000 10:00 UTC', 'Jan 1 2000 +02:00', 'Jan 1 2000T10:00', 'Jan 1 2000 10:00:00.1234567890',
    'Jan 1 2000 10:00 ', ' Jan 1 2000', 'Jan 1 2000 10', '2000/01/31 10:00:0', 'Jan 1 2000 1:00 am-08:00', 'Jan 1 2000 1:00 PMZ', 'Jan 1 2000 1:00 PM+01',
  ])('not a date: %s', (text) => {
    expect(classify(text)).toBe(0);
  });

  test('bytes after the value are not read as part of it', () => {
    const b = Buffer.from('Jan 1 2000 10:00,+02:00');
    expect(writtenDateBits(b, 0, 16)).toBe(TS24 | Bit.MonDY);
    const c = Buffer.from('31/01/2000,5');
    expect(writtenDateBits(c, 0, 10)).toBe(DAY | Bit.DmySlash);
    expect(writtenDateBits(Buffer.from('Jan 1 20001'), 0, 10)).toBe(DAY | Bit.MonDY);
  });
});

describe('numbers with thousands separators', () => {
  test.each([
    ['1,234', INT | Bit.Grouped],
    ['-1,234,567', INT | Bit.Grouped],
    ['1,234.56', DEC | Bit.Grouped],
    ['999,999,999,999,999', INT | Bit.Grouped],
    ['9,223,372,036,854,775,808', Bit.NumericInt | Bit.NumericAny | Bit.Grouped],
    ['999', INT | Bit.Bare | Bit.Grouped],
    ['1000', INT | Bit.Bare],
    ['12.5', DEC | Bit.Bare | Bit.Grouped],
    ['1234.5', DEC | Bit.Bare],
    ['1e3', DEC | Bit.Bare],
  ])('%s', (text, bits) => {
    expect(classify(text)).toBe(bits);
  });

  test.each(['1,23', '12,34', '1,2345', '0,123', '1,234,56', ',123', '1,,234', '1,234e5', '1, 234', '1 234', '1.234,5', '-,123'])('not a number: %s', (text) => {
    expect(classify(text)).toBe(0);
  });
});

describe('a column of them', () => {
  test('one layout (abbreviated or full month names alike), dates mixed with times of it', () => {
    expect(typeOf('Jan 1 2000', 'Feb 29 2000', 'December 31 1999')).toEqual({ type: 'date', written: { layout: 'Mon D YYYY' } });
    expect(typeOf('2015/01/01 01:00:00', '2015/01/02', null)).toEqual({ type: 'timestamp without time zone', written: { layout: 'YYYY/MM/DD' } });
    expect(typeOf('Jan 1 2000 1:00 PM', 'Jan 2 2000')).toEqual({ type: 'timestamp without time zone', written: { layout: 'Mon D YYYY', clock12: true } });
    expect(typeOf('31.01.2000 10:00Z', '01.02.2000 11:00 +01:00')).toEqual({ type: 'timestamp with time zone', written: { layout: 'DD.MM.YYYY' } });
  });

  test('a first field over 12 settles month or day first; nothing settling it keeps TEXT and says why', () => {
    expect(typeOf('01/02/2000', '13/02/2000')).toEqual({ type: 'date', written: { layout: 'DD/MM/YYYY' } });
    expect(typeOf('01/02/2000', '02/13/2000')).toEqual({ type: 'date', written: { layout: 'MM/DD/YYYY' } });
    expect(typeOf('01-02-2000 10:00', '02-13-2000')).toEqual({ type: 'timestamp without time zone', written: { layout: 'MM-DD-YYYY' } });
    expect(typeOf('01/02/2000', '03/04/2000')).toEqual({ type: 'text', ambiguous: ['MM/DD/YYYY', 'DD/MM/YYYY'] });
    expect(typeOf('13/02/2000', '02/13/2000')).toEqual({ type: 'text' });
  });

  test('two layouts, two clocks, or days with offsets mixed in stay TEXT', () => {
    expect(typeOf('Jan 1 2000', 'January 2, 2000')).toEqual({ type: 'text' });
    expect(typeOf('2000-01-31', 'Jan 31 2000')).toEqual({ type: 'text' });
    expect(typeOf('2000/01/31 13:00', '2000/01/31 1:00 PM')).toEqual({ type: 'text' });
    expect(typeOf('2000/01/31', '2000/01/31 10:00Z')).toEqual({ type: 'text' });
    expect(typeOf('2000/01/31 10:00', '2000/01/31 10:00Z')).toEqual({ type: 'text' });
  });

  test('ISO stays as it was: no written layout', () => {
    expect(typeOf('2000-01-31', '2000-02-01 10:00')).toEqual({ type: 'timestamp without time zone' });
  });

  test('grouped numbers by the usual rules; bare ones under 1,000 fit too, bare ones over do not', () => {
    expect(typeOf('1,234', '999', '-5')).toEqual({ type: 'bigint', written: { layout: GROUPED } });
    expect(typeOf('1,234.5', '2')).toEqual({ type: 'double precision', written: { layout: GROUPED } });
    expect(typeOf('12,345,678,901,234,567,890', '1')).toEqual({ type: 'numeric', written: { layout: GROUPED } });
    expect(typeOf('12', '999')).toEqual({ type: 'bigint' });
    expect(typeOf('1,234', '5678')).toEqual({ type: 'text' });
    expect(typeOf('1,234', '1e3')).toEqual({ type: 'text' });
    expect(typeOf('2,5', '4,5')).toEqual({ type: 'text' });
  });
});

describe('what Postgres is given', () => {
  test('all-digit days go in ISO order, the time after them untouched; other layouts as written', () => {
    expect(readable('1/2/2000', 'date', { layout: 'MM/DD/YYYY' })).toBe('2000-01-02');
    expect(readable('1/2/2000', 'date', { layout: 'DD/MM/YYYY' })).toBe('2000-02-01');
    expect(readable('31.12.1999 23:59:59.5 +01:00', 'timestamp with time zone', { layout: 'DD.MM.YYYY' })).toBe('1999-12-31 23:59:59.5 +01:00');
    expect(readable('12-31-1999 1:00 PM', 'timestamp without time zone', { layout: 'MM-DD-YYYY', clock12: true })).toBe('1999-12-31 1:00 PM');
    expect(readable('Jan 31 2000', 'date', { layout: 'Mon D YYYY' })).toBe('Jan 31 2000');
    expect(readable('2000/01/31', 'date', { layout: 'YYYY/MM/DD' })).toBe('2000/01/31');
    expect(rewriterOf('date', { layout: 'Mon D YYYY' })).toBeUndefined();
  });

  test('thousands separators dropped, for number types only', () => {
    expect(readable('-1,234,567.25', 'numeric(12,2)', { layout: GROUPED })).toBe('-1234567.25');
    expect(readable('999', 'bigint', { layout: GROUPED })).toBe('999');
    expect(readable('1,234', 'text', { layout: GROUPED })).toBe('1,234');
    expect(readable('1,23', 'bigint', { layout: GROUPED })).toBe('1,23');
    expect(readable('1,234x', 'bigint', { layout: GROUPED })).toBe('1,234x');
  });

  test('the same in SQL, for the row-by-row load', () => {
    expect(castSql('c1', 'bigint', { layout: GROUPED })).toBe(`replace(c1, ',', '')::bigint`);
    expect(castSql('c1', 'text', { layout: GROUPED })).toBe('c1');
    expect(castSql('c1', 'date', { layout: 'DD.MM.YYYY' })).toBe(`regexp_replace(c1,  E'^(\\\\d{1,2})[/.-](\\\\d{1,2})[/.-](\\\\d{4})',  E'\\\\3-\\\\2-\\\\1')::date`);
    expect(castSql('c1', 'date', { layout: 'Mon D YYYY' })).toBe('c1::date');
  });

  test('the example a preview shows: the 31st of January 2000 at 13:30', () => {
    expect(exampleOf('Mon D YYYY', 'date', false)).toBe('Jan 31 2000');
    expect(exampleOf('DD/MM/YYYY', 'timestamp', false)).toBe('31/01/2000 13:30');
    expect(exampleOf('Month D, YYYY', 'timestamptz', true)).toBe('January 31, 2000 1:30 PM +01:00');
  });
});
