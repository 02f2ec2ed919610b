/**
 * The direct load (src/ingest/direct.ts) against a real Postgres, through the library on a
 * connection of the user's role: differential — every file loaded directly, cut into chunks of
 * many sizes, gives the same table (types, rows, values) as the row-by-row path — plus the guesses
 * that fail (restart, conversion, header) on files larger than the sample, and what goes row by
 * row (and why). Nothing may be left behind: no table, no spool file.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SAMPLE_BYTES } from '../../src/ingest/direct.js';
import { importUpload, type ImportMode, type ImportOutcome, type ParseOptions, type Progress } from '../../src/ingest/index.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { chunks } from '../unit/ingest/helpers.js';
import { random, randomCsv } from '../unit/ingest/random-csv.js';
import { columnsOf, fixture, leftovers, rows } from './ingest-helpers.js';

let svc: TestService;
let alice: { name: string; key: string };
let repo: string;
let n = 0;
beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  repo = `${alice.name}/direct`;
  await svc.control.createRepo(repo);
});
afterAll(() => svc.stop());

interface LoadOptions {
  size?: number;
  mode?: ImportMode;
  table?: string;
  source?: AsyncIterable<Buffer>;
  progress?: Progress;
}

/** Imports `text` as the user (a connection of its own, dropped on failure as the route does). */
async function load(text: string | Buffer, opts: Partial<ParseOptions> = {}, { size = 65536, mode = 'create', table = `t${n++}`, source, progress }: LoadOptions = {}): Promise<ImportOutcome & { table: string }> {
  const client = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await client.connect();
  try {
    await client.query(`SET ROLE ${pg.escapeIdentifier(alice.name)}`);
    const parse = { header: 'auto' as const, nullValues: [''], encoding: 'utf-8', fileName: 'x.csv', ...opts };
    const outcome = await importUpload(client, source ?? chunks(text, size), parse, { schema: repo, table, mode }, progress ?? { bytes: 0, rows: 0 });
    return { ...outcome, table };
  } finally {
    await client.end();
  }
}

async function contents(table: string): Promise<{ types: Record<string, string>; data: (string | null)[][] }> {
  return { types: await columnsOf(svc, repo, table), data: await rows(svc, `SELECT * FROM "${repo}"."${table}"`) };
}

/** Postgres' COPY takes one NULL text: two (the same twice) make the row-by-row path load the file. */
const rowByRow = (opts: Partial<ParseOptions>): Partial<ParseOptions> => ({ ...opts, nullValues: [...(opts.nullValues ?? ['']), ...(opts.nullValues ?? [''])] });

function spoolFiles(): string[] {
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.includes('repobase-upload-') ? [target] : [];
    } catch {
      return [];
    }
  });
}

const CASES: [string, string | Buffer, Partial<ParseOptions>][] = [
  ['every type, quotes, NULL and ""', 'id,amount,when,at,flag,note,big\n1,2.5,2024-01-01,2024-03-04T05:06:07,true,"a, b",92233720368547758070\n2,,2024-01-02,2024-03-04 05:06:07.5,No,"",1\n-3,1e3,,,,"x ""q""",\n', {}],
  ['CRLF, blank lines, CRLF inside quotes', 'id,"na,me"\r\n\r\n1,"x\r\n""y"""\r\n2,\r\n\r\n\r\n', {}],
  ['CR line ends', 'a,b\r1,x\r\r2,"y\rz"\r', {}],
  ['no header, no final line end', '1,2024-01-01,true\n2,2024-01-02,false', {}],
  ['an all-text header', 'city,country\nParis,France\nRome,Italy\n', {}],
  ['all text, no header', 'Paris,France\nRome,France\n', {}],
  ['dates with day and month both numbers, rewritten in ISO order', 'us,eu,dotted,ambiguous\n12/31/2024,31/12/2024,31.12.2024,01/02/2024\n3/5/2024,13/5/2024,1.2.2024,03/04/2024\n', {}],
  [
    'dates and timestamps with month names, AM/PM and offsets',
    'stock,flight,weather,movie,dash,day first,tz\nJan 1 2000,2015/01/01 01:00:00,2001/01/01 06:55,"January 31, 2000",01-Jan-2000,31 Jan 2000 1:30 PM,2015/01/01 01:00:00+05:30\n' +
      'Feb 29 2000,2015/12/31 23:59:59.999999,2001/01/01 00:00,"February 29, 2000",29-Feb-2000,1 Mar 2000 12:00 AM,2015/01/01 01:00:00Z\n' +
      'Dec 31 1999,,2001/01/02,"Dec 1, 1999",31-Dec-1999,29 Feb 2000 12:59:59 PM,2015/01/01 01:00 -0800\n',
    {},
  ],
  ['day-first timestamps in ISO order, the rest of the value as written', 'at;n\n"31.01.2000 13:30:05.25 +01:00";"1,234.5"\n01.02.2000 00:00 Z;7\n', { fileName: 'x.txt' }],
  ['thousands separators, quoted as spreadsheets export them', 'id,amount,total,mixed,big\n"1,234","1,234.56",-7,"1,000",12\n999,2.5,"-1,234,567",12,"12,345,678,901,234,567,890"\n', {}],
  ['a rewritten value equal to the NULL text is quoted', 'n;m\n1,000;x\n1000;y\n"2,000";z\n', { nullValues: ['1000'], fileName: 'x.txt' }],
  ['JSON cells', fixture('json-cells.csv'), {}],
  ['TSV', 'id\tname\tnote\n1\tAlice\t"has, commas"\n2\tBob\tquoted\n', { format: 'tsv', fileName: 'x.tsv' }],
  ['a NULL text of its own, alone on a line', 'a,b\nNA,1\nNA\n"NA",2\n,3\n', { nullValues: ['NA'] }],
  ['\\N as NULL', 'a,b\n\\N,1\n"\\N",\\N\n', { nullValues: ['\\N'] }],
  ['unicode and a BOM', '\ufeffname,n\nZoë,1\n日本語,2\n😀,3\n', {}],
  ['a header only', 'a,b\n', {}],
  ['forced header and none', 'x,y\n1,2\n', { header: 'none' }],
  ['semicolons, detected', 'a;b;c\n1;2,5;x\n3;4,5;y\n', { fileName: 'x.txt' }],
  ['spaces and tabs kept', 'a,b\n 42, x \n7,\t\n', {}],
  ['one column: "" is a row, a blank line is not', 'a\n""\nx\n\n', {}],
];

describe('the direct load makes the table the row-by-row path makes', () => {
  test.each(CASES)('%s', async (name, text, opts) => {
    const reference = await load(text, rowByRow(opts));
    expect(reference.load).toEqual({ path: 'rows' });
    const expected = await contents(reference.table);
    for (const size of [1, 2, 3, 7, 64, 65536]) {
      const got = await load(text, opts, { size });
      expect(got.load, `chunks of ${size}`).toEqual({ path: 'direct', restarts: 0, converted: 0 });
      expect({ ...got, table: '', load: undefined }, `chunks of ${size}`).toEqual({ ...reference, table: '', load: undefined });
      expect(await contents(got.table), `chunks of ${size}`).toEqual(expected);
    }
    expect(spoolFiles()).toEqual([]);
  });
});

describe('random files: Postgres reads what csv.ts reads', () => {
  test('150 random files (cut into random chunks) make the same tables, or fail alike', async () => {
    const next = random(99);
    const paths = { direct: 0, rows: 0, failed: 0 };
    for (let k = 0; k < 150; k++) {
      const delimiter = next() < 0.8 ? ',' : '\t';
      const nullValues = [next() < 0.8 ? '' : 'NA'];
      const text = randomCsv(next, delimiter);
      const size = 1 + Math.floor(next() * 30);
      const opts = { delimiter, nullValues, format: 'csv' as const };
      const settle = <T>(p: Promise<T>) => p.then((v) => ({ ok: v }), (err: unknown) => ({ err: err as { code: string; message: string } }));
      const reference = await settle(load(text, rowByRow(opts)));
      const got = await settle(load(text, opts, { size }));
      if ('err' in reference) {
        if (reference.err.message === 'the file is empty') continue;
        expect('err' in got ? { code: got.err.code, message: got.err.message } : got, JSON.stringify(text)).toEqual({ code: reference.err.code, message: reference.err.message });
        paths.failed++;
        continue;
      }
      expect('ok' in got, JSON.stringify(text)).toBe(true);
      if (!('ok' in got)) continue;
      paths[got.ok.load!.path]++;
      expect({ ...got.ok, table: '', load: undefined }, JSON.stringify(text)).toEqual({ ...reference.ok, table: '', load: undefined });
      expect(await contents(got.ok.table), JSON.stringify(text)).toEqual(await contents(reference.ok.table));
    }
    expect(paths.direct).toBeGreaterThan(80);
    expect(paths.failed).toBeGreaterThan(5);
  }, 120_000);
});

describe('what only the row-by-row path reads as csv.ts does', () => {
  test.each([
    ['a quote inside an unquoted field', 'a,b\nx"y,1\n', [['x"y', '1']]],
    ['text after a closing quote', 'a,b\n"x"y,1\n', [['"x"y', '1']]],
    ['mixed line ends', 'a,b\n1,2\r\n3,4\n', [['1', '2'], ['3', '4']]],
    ['a \\. line', 'a\nx\n\\.\ny\n', [['x'], ['\\.'], ['y']]],
  ])('%s', async (reason, text, data) => {
    const got = await load(text);
    expect(got.load).toEqual({ path: 'rows', reason });
    expect((await contents(got.table)).data).toEqual(data);
  });

  test('a value Postgres refuses on append (too long for varchar(3)): the row path casts it, as before', async () => {
    await load('id,code\n1,abc\n', {}, { table: 'codes' });
    await svc.control.admin.query(`ALTER TABLE "${repo}".codes ALTER COLUMN code TYPE varchar(3)`);
    const got = await load('id,code\n2,abcdef\n', {}, { table: 'codes', mode: 'append' });
    expect(got.load?.path).toBe('rows');
    expect(got.load?.reason).toMatch(/^Postgres: value too long for type character varying\(3\)/);
    expect((await contents('codes')).data).toEqual([
      ['1', 'abc'],
      ['2', 'abc'],
    ]);
  });

  test('append by header names and by position go direct; errors are the row path\'s', async () => {
    await load('id,name\n1,Ann\n', {}, { table: 'people' });
    expect((await load('name,id\nBen,2\n', {}, { table: 'people', mode: 'append' })).load).toEqual({ path: 'direct', restarts: 0, converted: 0 });
    expect((await load('3,Cy\n', { header: 'none' }, { table: 'people', mode: 'append' })).load).toEqual({ path: 'direct', restarts: 0, converted: 0 });
    expect((await contents('people')).data).toEqual([
      ['1', 'Ann'],
      ['2', 'Ben'],
      ['3', 'Cy'],
    ]);
    await expect(load('id,name\n4,Dee\n5\n', {}, { table: 'people', mode: 'append' })).rejects.toMatchObject({ code: '22P04', message: 'line 3 has 1 fields; expected 2 like the first line' });
    await expect(load('id,name\nfour,Dee\n', {}, { table: 'people', mode: 'append' })).rejects.toMatchObject({ code: '22P02', message: expect.stringMatching(/^line 2, column "id": invalid input syntax for type bigint/) });
    await expect(load('id,nom\n4,Dee\n', {}, { table: 'people', mode: 'append' })).rejects.toMatchObject({ code: '42703' });
    expect((await contents('people')).data).toHaveLength(3);
    expect(await leftovers(svc)).toEqual([]);
    expect(spoolFiles()).toEqual([]);
  });
});

/** A CSV past the sample: `rows` lines of `line(i)` after the header. */
function big(header: string, line: (i: number) => string, rowCount = Math.ceil((SAMPLE_BYTES * 1.4) / 12)): string {
  const parts = [header];
  for (let i = 1; i <= rowCount; i++) parts.push(line(i));
  return parts.join('\n') + '\n';
}

/** The first line number whose line ends past `bytes` when lines are `line(i)`. */
function lineAfter(bytes: number, line: (i: number) => string): number {
  let i = 0;
  for (let length = 0; length <= bytes; ) length += Buffer.byteLength(line(++i)) + 1;
  return i;
}

describe('guesses from the first MiB that the rest contradicts', () => {
  const after = lineAfter(SAMPLE_BYTES * 1.1, (i) => `${i},${i}`);

  test('integers, then a decimal: started over once as DOUBLE PRECISION', async () => {
    const got = await load(big('id,v', (i) => `${i},${i === after ? '2.5' : i}`));
    expect(got.load).toEqual({ path: 'direct', restarts: 1, converted: 0 });
    expect(got.columns.map((c) => c.type)).toEqual(['bigint', 'double precision']);
    expect(await rows(svc, `SELECT count(*), sum(v) FROM "${repo}"."${got.table}"`)).toEqual([[String(got.rows), String((got.rows * (got.rows + 1)) / 2 - after + 2.5)]]);
  });

  test('integers, then a code with a leading zero: TEXT, every value as written', async () => {
    const got = await load(big('id,v', (i) => `${i},${i === after ? '007' : i}`));
    expect(got.load).toEqual({ path: 'direct', restarts: 1, converted: 0 });
    expect(got.columns.map((c) => c.type)).toEqual(['bigint', 'text']);
    expect(await rows(svc, `SELECT v FROM "${repo}"."${got.table}" WHERE id IN (5, ${after}) ORDER BY id`)).toEqual([['5'], ['007']]);
  });

  test('a column without values in the sample: loaded as text, converted at the end', async () => {
    const empty = lineAfter(SAMPLE_BYTES * 1.1, (i) => `${i},`);
    const got = await load(big('id,v', (i) => `${i},${i > empty ? i : ''}`, empty * 1.2));
    expect(got.load).toEqual({ path: 'direct', restarts: 0, converted: 1 });
    expect((await contents(got.table)).types).toEqual({ id: 'bigint', v: 'bigint' });
  });

  test('the last record, without a line end, changes a type', async () => {
    const text = big('id,v', (i) => `${i},${i}`).slice(0, -1) + 'x';
    const got = await load(text);
    expect(got.load).toEqual({ path: 'direct', restarts: 1, converted: 0 });
    expect(got.columns.map((c) => c.type)).toEqual(['bigint', 'text']);
  });

  test('guess after guess: past the limit every column loads as text and is converted', async () => {
    // Each column gets its decimal two 64 KiB chunks after the one before (lines of ~36 bytes).
    const first = lineAfter(SAMPLE_BYTES * 1.05, (i) => Array(6).fill(i).join(','));
    const flip = (k: number) => first + k * 4000;
    const text = big('c0,c1,c2,c3,c4,c5', (i) => [0, 1, 2, 3, 4, 5].map((k) => (i === flip(k) ? `${i}.5` : String(i))).join(','), flip(5) + 1000);
    const reference = await load(text, rowByRow({}));
    const got = await load(text);
    expect(got.load).toEqual({ path: 'direct', restarts: 4, converted: 6 });
    expect(got.columns).toEqual(reference.columns);
    expect(got.columns.map((c) => c.type)).toEqual(Array(6).fill('double precision'));
    expect(await rows(svc, `SELECT * FROM "${repo}"."${got.table}" EXCEPT ALL SELECT * FROM "${repo}"."${reference.table}"`)).toEqual([]);
    expect(got.rows).toBe(reference.rows);
  }, 60_000);

  test('an all-text first row repeated further down: not a header after all, loaded row by row', async () => {
    const got = await load(big('Paris,France', (i) => (i === after ? 'Paris,Spain' : `town ${i},land ${i}`)));
    expect(got.load).toEqual({ path: 'rows', reason: 'the header guessed from the first rows' });
    expect(got.header).toBe(false);
    expect((await contents(got.table)).types).toEqual({ column_1: 'text', column_2: 'text' });
  });

  test('a line holding only the NULL text, cut by a chunk boundary after the sample: row by row', async () => {
    const size = 65536;
    const boundary = size * Math.ceil(SAMPLE_BYTES / size + 2);
    // b is text from the start: no restart (whose replay would hold the line back) comes first.
    let text = big('a,b', (i) => `${i},v${i}`, Math.floor(boundary / 15));
    text += `0,${'x'.repeat(boundary - 1 - Buffer.byteLength(text) - 3)}\nNA\n1,2\n`;
    const got = await load(text, { nullValues: ['NA'] }, { size });
    expect(got.load).toEqual({ path: 'rows', reason: 'a skipped line across chunks' });
    const reference = await load(text, rowByRow({ nullValues: ['NA'] }));
    expect(got.rows).toBe(reference.rows);
    expect((await load(text, { nullValues: ['NA'] }, { size: size + 1 })).load).toMatchObject({ path: 'direct' });
  });

  test('the same with values to rewrite: the record is held back until it ends, then skipped', async () => {
    const size = 65536;
    const boundary = size * Math.ceil(SAMPLE_BYTES / size + 2);
    let text = big('a,b,n', (i) => `${i},${i},"1,${String(i % 1000).padStart(3, '0')}"`, Math.floor(boundary / 22));
    text += `0,${'x'.repeat(boundary - 1 - Buffer.byteLength(text) - 3 - 9)},"1,000"\nNA\n1,2,"2,000"\n`;
    const got = await load(text, { nullValues: ['NA'] }, { size });
    expect(got.load).toEqual({ path: 'direct', restarts: 1, converted: 0 });
    const reference = await load(text, rowByRow({ nullValues: ['NA'] }));
    expect(got.rows).toBe(reference.rows);
    expect(await contents(got.table)).toEqual(await contents(reference.table));
  });

  test('the new table takes its name at commit: an upload of the same name meanwhile does not wait for it', async () => {
    const text = big('id,v', (i) => `${i},${i}`);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    async function* slow(): AsyncGenerator<Buffer> {
      const buf = Buffer.from(text);
      yield buf.subarray(0, SAMPLE_BYTES + 65536); // past the sample: the COPY is running
      await gate;
      yield buf.subarray(SAMPLE_BYTES + 65536);
    }
    const progress = { bytes: 0, rows: 0 };
    const first = load(text, {}, { table: 'race', source: slow(), progress });
    while (progress.bytes === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 200));
    const waited = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the second upload waited for the first')), 10_000));
    const second = await Promise.race([load('id\n1\n', {}, { table: 'race' }), waited]).finally(release);
    expect(second.load?.path).toBe('direct');
    await expect(first).rejects.toMatchObject({ code: '42P07', message: 'relation "race" already exists' });
    expect((await contents('race')).data).toEqual([['1']]);
    expect(await leftovers(svc)).toEqual([]);
  });

  test('a ragged row after the sample fails with its line; nothing is left behind', async () => {
    await expect(load(big('id,v', (i) => (i === after ? '1' : `${i},${i}`)), {}, { table: 'ragged' })).rejects.toMatchObject({ code: '22P04', message: `line ${after + 1} has 1 fields; expected 2 like the first line` });
    expect(await columnsOf(svc, repo, 'ragged')).toEqual({});
    expect(await leftovers(svc)).toEqual([]);
    expect(spoolFiles()).toEqual([]);
  });
});
