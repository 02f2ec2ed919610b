/**
 * classifyBytes must answer what classify() answers for the same text (SLOW meaning "ask
 * classify()"): on every cell of the fixtures, on tables of edge cases, and on random texts built
 * from the pieces the rules look at, so that near misses (a digit too many, a wrong separator,
 * the 31st of a 30-day month) are tried by the thousand.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { Bit, classify } from '../../../src/ingest/classify.js';
import { classifyBytes, SLOW } from '../../../src/ingest/classify-bytes.js';
import { FIXTURES } from '../../integration/ingest-helpers.js';
import { random } from './random-csv.js';

function viaBytes(text: string): number {
  const b = Buffer.from(`«${text}»`, 'utf8'); // not at offset 0, and with bytes around it
  const s = Buffer.byteLength('«');
  const bits = classifyBytes(b, s, b.length - s);
  return bits === SLOW ? classify(text) : bits;
}

function expectSame(texts: Iterable<string>): void {
  const differ: string[] = [];
  for (const t of texts) if (viaBytes(t) !== classify(t)) differ.push(`${JSON.stringify(t)}: bytes ${viaBytes(t)}, classify ${classify(t)}`);
  expect(differ).toEqual([]);
}

const EDGE = [
  '', '0', '-0', '00', '-', '.', '-.', '.5', '-.5', '1.', '1.e5', '1e', '1e+', '1e-5', '1E+05', '1e400', '1e-400', '0e999', '0.0e-999',
  '007', '-007', '0.5', '00.5', '1,234', ' 42', '42 ', '+5', '1_000', '١٢',
  '123456789012345', '1234567890123456', '9007199254740992', '9007199254740993', '-9007199254740992', '-9007199254740993',
  '9223372036854775807', '9223372036854775808', '-9223372036854775808', '-9223372036854775809', '99999999999999999999', '12345678901234567890123',
  '1'.repeat(300) + '.5', '1'.repeat(299) + '.5', '0.' + '0'.repeat(330) + '1', '0.' + '0'.repeat(298) + '1', '1'.repeat(31) + 'e99', '1'.repeat(30) + 'e99',
  '2024-02-29', '2023-02-29', '2024-13-01', '2024-00-10', '0000-01-01', '2024-1-01', '2024-01-01x', '2024/02/29', '2024/2/3', '2024/2/30', '2024/02/029',
  '2024-03-04T05:06', '2024-03-04T05:06:07', '2024-03-04 05:06:07.123456789', '2024-03-04 05:06:07.1234567890', '2024-03-04T05:06:07.', '2024-03-04T05:06:',
  '2024-03-04T24:00', '2024-03-04T23:60', '2024-03-04T23:59:60', '2024-03-04T05:06Z', '2024-03-04T05:06:07+02:00', '2024-03-04T05:06:07-0530',
  '2024-03-04T05:06:07+02', '2024-03-04T05:06:07+16:00', '2024-03-04T05:06:07+02:60', '2024-03-04T05:06:07+02:0', '2024-03-04T05:06:07+', '2024-03-04T05:06:07Zx',
  '2024-03-04t05:06', '2024-03-04  05:06', '2024-02-30T10:00',
  '12/31/2024', '31/12/2024', '01/02/2024', '3/5/2024', '13/13/2024', '1/2/24', '1/2/20245', '1-2-2024', '1.2.2024', '31.12.2024', '12.31.2024', '1/2-2024', '1.2/2024',
  '001/02/2024', '1//2024', '29/02/2023', '02/29/2024',
  'true', 'TRUE', 'True', 'false', 't', 'F', 'yes', 'NO', 'y', 'n', 'on', 'off', 'tru', 'truee', 'falsé', 'ｔrue', 'T', '1', 'yes ',
  '{}', '[]', '{"a":1}', '[1,2', '{not json}', '{"a":"\\u0000"}', '[1]x', '{"é": "ü"}', '[', ']', '{',
  'NaN', 'Infinity', '-Infinity', 'é', '日本語', '😀', '2024-01-01é',
  '1,234', '-1,234', '1,234.5', '1,234.', '1,23', '12,345,678', '0,123', '1,2345', '1,234,56', ',123', '-,123', '1,234e5', '1,234.5.6',
  '1,234,567,890,123,456', '9,223,372,036,854,775,807', '9,223,372,036,854,775,808', '1,' + '000,'.repeat(100) + '000.5',
  'Jan 1 2000', 'jan 31 2000 1:30 PM', 'January 31, 2000', '31 Jan 2000', '31-Jan-2000', '2000/01/31 13:30:00 +01:00', 'Feb 29 2023', 'Sept 3, 2012 10:00Z',
];

describe('classifyBytes agrees with classify', () => {
  test('edge cases', () => expectSame(EDGE));

  test('every cell of the CSV fixtures', () => {
    const cells = readdirSync(FIXTURES)
      .filter((f) => f.endsWith('.csv') || f.endsWith('.tsv'))
      .flatMap((f) => readFileSync(join(FIXTURES, f), 'utf8').split(/[\r\n,;\t|]+/))
      .map((c) => c.replace(/^"|"$/g, '').replaceAll('""', '"'));
    expect(cells.length).toBeGreaterThan(100);
    expectSame(cells);
  });

  test('30,000 random texts made of the pieces the rules look at', () => {
    const next = random(42);
    const pieces = ['0', '1', '2', '9', '12', '31', '29', '02', '13', '2024', '2023', '1900', '-', '+', '.', ':', '/', 'e', 'E', 'T', ' ', 'Z', '{', '}', '[', ']', '"', 'a', 't', 'rue', 'yes', 'no', 'f', '00', '60', '59', '23', '24', '15', '16', '999', 'é'];
    const texts: string[] = [];
    for (let n = 0; n < 30000; n++) {
      let t = '';
      const len = 1 + Math.floor(next() * 9);
      for (let k = 0; k < len; k++) t += pieces[Math.floor(next() * pieces.length)];
      texts.push(t);
    }
    expectSame(texts);
  });

  test('random near-dates and near-timestamps', () => {
    const next = random(7);
    const d = (w: number) => String(Math.floor(next() * 10 ** w)).padStart(next() < 0.8 ? w : 1, '0');
    const texts: string[] = [];
    for (let n = 0; n < 20000; n++) {
      const sep = ['-', '/', '.', '-'][Math.floor(next() * 4)]!;
      const date = next() < 0.5 ? `${d(4)}${sep}${d(2)}${sep}${d(2)}` : `${d(2)}${sep}${d(2)}${sep}${d(4)}`;
      const time = next() < 0.5 ? '' : `${next() < 0.5 ? 'T' : ' '}${d(2)}:${d(2)}${next() < 0.5 ? `:${d(2)}` : ''}${next() < 0.3 ? `.${d(1 + Math.floor(next() * 10))}` : ''}`;
      const zone = next() < 0.6 ? '' : ['Z', `+${d(2)}`, `-${d(2)}:${d(2)}`, `+${d(2)}${d(2)}`][Math.floor(next() * 4)]!;
      texts.push(date + time + zone);
    }
    expectSame(texts);
  });

  test('random dates and numbers as people write them, and near misses', () => {
    const next = random(11);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    const d = (w: number) => String(Math.floor(next() * 10 ** w)).padStart(next() < 0.7 ? w : 1, '0');
    const months = ['Jan', 'jan', 'JAN', 'January', 'Sept', 'sep', 'May', 'Jon', 'Decem', 'december'];
    const texts: string[] = [];
    for (let n = 0; n < 20000; n++) {
      const date = pick([
        () => `${d(4)}/${d(2)}/${d(2)}`,
        () => `${d(2)}${pick(['/', '.', '-'])}${d(2)}${pick(['/', '.', '-'])}${d(4)}`,
        () => `${pick(months)} ${d(2)}${pick(['', ',', ' ,'])} ${d(4)}`,
        () => `${d(2)}${pick([' ', '-'])}${pick(months)}${pick([' ', '-'])}${d(4)}`,
      ])();
      const time = next() < 0.4 ? '' : `${pick([' ', 'T', '  '])}${d(2)}:${d(2)}${next() < 0.5 ? `:${d(2)}` : ''}${next() < 0.3 ? `.${d(1 + Math.floor(next() * 10))}` : ''}`;
      const ampm = time && next() < 0.4 ? pick([' AM', 'pm', ' Pm', ' A', ' PMX']) : '';
      const zone = time && next() < 0.4 ? `${pick(['', ' '])}${pick(['Z', `+${d(2)}`, `-${d(2)}:${d(2)}`, `+${d(2)}${d(2)}`, '+1'])}` : '';
      texts.push(date + time + ampm + zone);
      const groups = Array.from({ length: 1 + Math.floor(next() * 6) }, () => d(3)).join(pick([',', ',', ',', '.', ' ']));
      texts.push(`${next() < 0.2 ? '-' : ''}${pick(['', '1', '12', '123', '0', '1234'])}${groups}${next() < 0.3 ? `.${d(2)}` : ''}`);
    }
    expectSame(texts);
  });

  test('random numbers around the int8 and double limits', () => {
    const next = random(3);
    const texts: string[] = [];
    for (let n = 0; n < 20000; n++) {
      const digits = Array.from({ length: 1 + Math.floor(next() * 22) }, () => Math.floor(next() * 10)).join('');
      const base = next() < 0.5 ? '922337203685477580'.slice(0, Math.floor(next() * 19)) + digits : digits;
      const frac = next() < 0.3 ? `.${digits.slice(0, Math.floor(next() * 5))}` : '';
      const exp = next() < 0.2 ? `e${next() < 0.5 ? '-' : ''}${Math.floor(next() * 500)}` : '';
      texts.push(`${next() < 0.3 ? '-' : ''}${base}${frac}${exp}`);
    }
    expectSame(texts);
  });

  test('the answers are the specific bits, not just "same as classify"', () => {
    expect(viaBytes('9007199254740993')).toBe(Bit.Bigint | Bit.NumericInt | Bit.NumericAny | Bit.Bare);
    expect(viaBytes('2024-03-04T05:06:07+02:00')).toBe(Bit.TimestampTz | Bit.Iso | Bit.Clock24);
    expect(viaBytes('01/02/2024')).toBe(Bit.Date | Bit.Timestamp | Bit.Clock24 | Bit.Clock12 | Bit.MdySlash | Bit.DmySlash);
    expect(classifyBytes(Buffer.from('{"a":1}'), 0, 7)).toBe(SLOW);
    expect(classifyBytes(Buffer.from('{"a":1'), 0, 6)).toBe(0);
  });
});
