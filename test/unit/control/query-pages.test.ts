/**
 * The page layout of stored async results: every value comes back as the text it was, NULL as
 * NULL and the empty string as itself, whatever its characters, across rows of any width.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodePage, encodePage } from '../../../src/control/query-pages.js';

describe('result pages', () => {
  it('round-trip NULL, the empty string, quotes, line breaks and characters beyond the BMP', () => {
    const rows = [
      ['1', null, ''],
      ['a,"b"\r\nc', '😀 ü ß 中', '\u0000x'],
      [],
      ['x'.repeat(100_000)],
    ];
    expect(decodePage(encodePage(rows))).toEqual(rows);
  });

  it('round-trip any rows (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.option(fc.string({ unit: 'binary' }), { nil: null }), { maxLength: 12 }), { maxLength: 50 }), (rows) => {
        expect(decodePage(encodePage(rows))).toEqual(rows);
      }),
      { seed: 20261128, numRuns: 300 },
    );
  });

  it('holds a 2-byte column count per row, then a 4-byte length and the bytes of each value (-1 for NULL)', () => {
    expect(encodePage([['a', 'b'], ['c', null]]).length).toBe(2 + 5 + 5 + 2 + 5 + 4);
  });
});
