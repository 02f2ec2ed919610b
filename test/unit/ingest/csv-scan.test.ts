/**
 * The byte scanner of the direct load against the row parser (csv.ts through previewUpload): on
 * every CSV both can read the same way they must find the same header, column names and types,
 * row count, and the same errors with the same lines — wherever the chunks are cut. What the
 * scanner calls incompatible (Postgres would read it differently) goes row by row instead.
 */
import { parse } from 'csv-parse/sync';
import { describe, expect, test } from 'vitest';
import { csvReader } from '../../../src/ingest/csv.js';
import { CsvScan, SKIP_FIRST } from '../../../src/ingest/csv-scan.js';
import { columnNames } from '../../../src/ingest/names.js';
import type { HeaderMode, Written } from '../../../src/ingest/types.js';
import type { DateLayout } from '../../../src/ingest/written.js';
import { chunks, preview } from './helpers.js';
import { random, randomCsv } from './random-csv.js';

interface Result {
  error?: string;
  header?: boolean;
  rows?: number;
  columns?: { name: string; type: string; written?: Written | undefined; ambiguous?: DateLayout[] | undefined }[];
}

function scan(text: string, size: number, opts: { delimiter?: string; nullText?: string; header?: HeaderMode } = {}): { scan: CsvScan; result: Result; forwarded: string } {
  const s = new CsvScan((opts.delimiter ?? ',').charCodeAt(0), Buffer.from(opts.nullText ?? ''), true);
  const buf = Buffer.from(text);
  const skips: number[] = [];
  try {
    for (let i = 0; i < buf.length; i += size) {
      s.feed(buf.subarray(i, i + size));
      skips.push(...s.takeSkips());
    }
    s.end();
    skips.push(...s.takeSkips());
    if (s.incompatible !== undefined) return { scan: s, result: {}, forwarded: '' };
    if (s.width < 0) return { scan: s, result: { error: 'the file holds no records' }, forwarded: '' };
  } catch (err: unknown) {
    return { scan: s, result: { error: (err as Error).message }, forwarded: '' };
  }
  const header = s.isHeader(opts.header ?? 'auto');
  const names = columnNames(header ? s.first : [], s.width);
  const columns = s.types(header).map((t, i) => ({ name: names[i]!, ...t }));
  // The bytes Postgres would get: the stream less blank lines and (with a header) the first record.
  let forwarded = '';
  let pos = 0;
  for (let k = 0; k < skips.length; k += 3) {
    if (skips[k + 2] === SKIP_FIRST && !header) continue;
    forwarded += buf.subarray(pos, Math.max(pos, skips[k]!)).toString();
    pos = Math.max(pos, skips[k + 1]!);
  }
  forwarded += buf.subarray(pos).toString();
  return { scan: s, result: { header, rows: s.rows + (header ? 0 : 1), columns }, forwarded };
}

async function rowPath(text: string, opts: { delimiter?: string; nullText?: string; header?: HeaderMode } = {}): Promise<Result> {
  try {
    const p = await preview(text, { format: 'csv', delimiter: opts.delimiter ?? ',', nullValues: [opts.nullText ?? ''], header: opts.header ?? 'auto' }, 4096);
    return { header: p.header, rows: p.rows, columns: p.columns.map((c) => ({ name: c.name, type: c.type, written: c.written, ambiguous: c.ambiguous })) };
  } catch (err: unknown) {
    return { error: (err as Error).message };
  }
}

/** All records of `text` as csv.ts reads them (blank lines dropped). */
async function records(text: string, delimiter = ',', nullText = ''): Promise<(string | null)[][]> {
  const out: (string | null)[][] = [];
  for await (const rows of csvReader(chunks(text, 4096), delimiter, [nullText]).rows()) out.push(...rows.map((r) => r.values));
  return out;
}

describe('the scanner reads what csv.ts reads', () => {
  test('2,000 random files, cut into random chunk sizes', async () => {
    const next = random(1234);
    let compared = 0;
    for (let n = 0; n < 2000; n++) {
      const delimiter = next() < 0.8 ? ',' : '\t';
      const nullText = next() < 0.8 ? '' : 'NA';
      const text = randomCsv(next, delimiter);
      const size = 1 + Math.floor(next() * 40);
      const { result, scan: s, forwarded } = scan(text, size, { delimiter, nullText });
      if (s.incompatible !== undefined) continue;
      const expected = await rowPath(text, { delimiter, nullText });
      if (expected.error === 'the file is empty') continue;
      compared++;
      expect(result, JSON.stringify(text)).toEqual(expected);
      if (result.error === undefined) {
        // What Postgres is sent holds exactly the data records, in order, and no blank line.
        const all = await records(text, delimiter, nullText);
        const data = result.header ? all.slice(1) : all;
        expect(await records(forwarded, delimiter, nullText), JSON.stringify(text)).toEqual(data);
        const raw = parse(forwarded, { delimiter, relax_column_count: true, relax_quotes: true, record_delimiter: ['\r\n', '\n', '\r'] }) as string[][];
        expect(raw.length, JSON.stringify(forwarded)).toBe(data.length);
      }
    }
    expect(compared).toBeGreaterThan(1500);
  });

  test.each([
    ['quotes, CRLF inside quotes, blank lines', 'id,"na,me",when\r\n\r\n1,"x\r\n""y""",2024-01-01\r\n2,,2024-01-02\r\n\r\n'],
    ['CR line ends', 'a,b\r1,x\r\r2,"y\rz"\r'],
    ['no final line end, NULL last field', 'a,b\n1,2\n3,'],
    ['a header only', 'city,country\n'],
    ['unicode', 'name,n\nZoë,1\n日本語,2\n😀,3\n'],
  ])('%s: the same wherever the chunks are cut', async (_name, text) => {
    const expected = await rowPath(text);
    expect(expected.error).toBeUndefined();
    for (let size = 1; size <= Buffer.byteLength(text); size++) {
      const { result, scan: s } = scan(text, size);
      expect(s.incompatible).toBeUndefined();
      expect(result, `chunks of ${size}`).toEqual(expected);
    }
  });

  test('errors name the same line', async () => {
    for (const text of ['a,b,c\n1,2,3\n4,5\n', 'a,b\n"x\ny",1\n2\n', 'a,b\n1,2\n"3,4\n5,6\n', 'a,b\n\n\n1,2,3\n']) {
      const expected = await rowPath(text);
      expect(expected.error).toBeDefined();
      for (const size of [1, 3, 1000]) expect(scan(text, size).result, JSON.stringify(text)).toEqual(expected);
    }
    expect(scan('a,b\n"x\ny",1\n2\n', 2).result.error).toBe('line 4 has 1 fields; expected 2 like the first line');
    expect(await rowPath('NA\n\nNA\n', { nullText: 'NA' })).toEqual({ error: 'the file holds no records' });
    expect(scan('NA\n\nNA\n', 2, { nullText: 'NA' }).result).toEqual({ error: 'the file holds no records' });
  });

  test('one NULL text other than the empty field: lines holding only it are skipped, like blank ones', async () => {
    const text = 'a,b\nNA,1\nNA\n"NA",2\n,3\n';
    const expected = await rowPath(text, { nullText: 'NA' });
    expect(expected).toMatchObject({ rows: 3, columns: [{ name: 'a', type: 'text' }, { name: 'b', type: 'bigint' }] });
    for (const size of [1, 2, 5, 100]) expect(scan(text, size, { nullText: 'NA' }).result).toEqual(expected);
  });

  test('repeats of an all-text first row decide the header, as in infer.ts', async () => {
    for (const text of ['Paris,France\nRome,France\n', 'city,country\nParis,France\nRome,Italy\n', 'a,b\n"a",x\n', 'a,b\n"a""",x\n']) {
      const expected = await rowPath(text);
      for (const size of [1, 4, 100]) expect(scan(text, size).result, JSON.stringify(text)).toEqual(expected);
    }
  });
});

describe('what Postgres would read differently is left to csv.ts', () => {
  test.each([
    ['a quote inside an unquoted field', 'a,b\nx"y,1\n'],
    ['text after a closing quote', 'a,b\n"x"y,1\n'],
    ['mixed line ends', 'a,b\n1,2\r\n3,4\n'],
    ['a \\. line', 'a\n1\n\\.\n2\n'],
    ['a \\. line', '\\.\n1\n'],
  ])('%s', (reason, text) => {
    for (let size = 1; size <= text.length; size++) expect(scan(text, size).scan.incompatible).toBe(reason);
  });

  test('quotes and backslashes where Postgres reads them as csv.ts does are fine', () => {
    for (const text of ['a,b\n"x,""y""",1\n', 'a,b\nx\\.y,1\n', 'a,b\n"\\.",1\n', 'a,b\r\n"1\n2",3\r\n']) expect(scan(text, 1).scan.incompatible, text).toBeUndefined();
  });
});
