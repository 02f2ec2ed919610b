import { describe, expect, test } from 'vitest';
import { columnNames, cutIdentifier } from '../../../src/ingest/names.js';
import { detectDelimiter } from '../../../src/ingest/sniff.js';
import { preview, typesOf } from './helpers.js';

describe('names', () => {
  test('trimmed, unique, blanks numbered, cut to 63 bytes before de-duplication', () => {
    expect(columnNames([' a ', 'a', '', null, 'a_2'])).toEqual(['a', 'a_2', 'column_3', 'column_4', 'a_2_2']);
    const long = 'é'.repeat(40);
    expect(Buffer.byteLength(cutIdentifier(long))).toBe(62);
    const [x, y] = columnNames([long, long]);
    expect(x).not.toBe(y);
    expect(Buffer.byteLength(y!)).toBeLessThanOrEqual(63);
  });
});

describe('parsing, whatever the chunk boundaries', () => {
  test.each([1, 2, 3, 7, 64])('CSV split every %i bytes', async (size) => {
    const p = await preview('id,"na,me"\r\n1,"x\r\n""y"""\r\n2,\r\n', {}, size);
    expect(p.columns.map((c) => c.name)).toEqual(['id', 'na,me']);
    expect(p.sample).toEqual([
      ['1', 'x\r\n"y"'],
      ['2', null],
    ]);
  });
  test.each([1, 3, 5])('UTF-8 split inside characters every %i bytes; invalid bytes name their line', async (size) => {
    expect((await preview('a\n日本語\n😀\n', {}, size)).sample).toEqual([['日本語'], ['😀']]);
    await expect(preview(Buffer.concat([Buffer.from('a\nb\nc'), Buffer.from([0xc3, 0x28])]), {}, size)).rejects.toMatchObject({ code: '22021', message: 'invalid byte sequence for encoding "UTF8" at line 3' });
  });
  test('a NUL byte after the sniffed start names its line', async () => {
    const text = 'a,b\n' + '1,2\n'.repeat(20000) + '3,\u0000\n';
    await expect(preview(text, {}, 4096)).rejects.toMatchObject({ code: '22P04', message: 'the file holds binary data (a NUL byte at line 20002), not text' });
  });
  test('JSON elements split anywhere; strings with brackets; line numbers', async () => {
    const json = '[{"a": "}]", "b": 1},\n {"a": "x\\"y", "b": 2.5}]';
    for (const size of [1, 4, 100]) {
      const p = await preview(json, { fileName: 'x.json' }, size);
      expect(typesOf(p)).toEqual({ a: 'text', b: 'double precision' });
      expect(p.sample).toEqual([
        ['}]', '1'],
        ['x"y', '2.5'],
      ]);
    }
    await expect(preview('{"a":1}\n\n{"a":tru}\n', { fileName: 'x.ndjson' })).rejects.toMatchObject({ message: 'invalid JSON at line 3: the record is not valid JSON' });
  });
  test('delimiter detection', () => {
    expect(detectDelimiter('a;b;c\n1;2,5;3\n')).toBe(';');
    expect(detectDelimiter('a\tb\n1\t2\n')).toBe('\t');
    expect(detectDelimiter('"a,b"|c\n1|2\n')).toBe('|');
    expect(detectDelimiter('single\n1\n')).toBe(',');
  });
});
