/**
 * Dates, timestamps and numbers as people write them, against a real Postgres: every layout is
 * written by the test itself from known instants (day and second boundaries, leap days,
 * midnight, 12 AM and 12 PM, a time that does not exist in New York), loaded directly and row by
 * row under session settings that would misread them (DateStyle SQL, DMY; TimeZone
 * America/New_York), and the stored values must be exactly those instants. Then what the preview
 * says, the realistic shapes through the endpoint, a layout chosen by the caller that a value
 * does not fit (the upload fails naming its line and leaves nothing behind), and guesses that
 * the rest of the file contradicts.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SAMPLE_BYTES } from '../../src/ingest/direct.js';
import { importUpload, type ImportMode, type ImportOutcome, type ParseOptions } from '../../src/ingest/index.js';
import { parseOverrides } from '../../src/ingest/overrides.js';
import { DATE_LAYOUTS, type DateLayout } from '../../src/ingest/written.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { chunks } from '../unit/ingest/helpers.js';
import { random } from '../unit/ingest/random-csv.js';
import { columnsOf, leftovers, rows, upload } from './ingest-helpers.js';

let svc: TestService;
let alice: { name: string; key: string };
let repo: string;
let n = 0;
beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  repo = `${alice.name}/written`;
  await svc.control.createRepo(repo);
});
afterAll(() => svc.stop());

/** Settings under which a loader leaning on the session would misread: day first, a zone with DST. */
const HOSTILE = `SET DateStyle = 'SQL, DMY'; SET TimeZone = 'America/New_York'`;

/** Imports `text` as alice on a connection of its own with `HOSTILE` session settings; `rowByRow` forces the row-by-row path. */
async function load(text: string, opts: Partial<ParseOptions> & { rowByRow?: boolean } = {}, mode: ImportMode = 'create', table = `t${n++}`): Promise<ImportOutcome & { table: string }> {
  const client = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await client.connect();
  try {
    await client.query(`SET ROLE ${pg.escapeIdentifier(alice.name)}; ${HOSTILE}`);
    const { rowByRow, ...rest } = opts;
    // Postgres' COPY takes one NULL text: two make the upload go row by row.
    const nullValues = rowByRow ? ['', ''] : [''];
    const parse: ParseOptions = { header: 'auto', nullValues, encoding: 'utf-8', fileName: 'x.csv', ...rest };
    const outcome = await importUpload(client, chunks(text, 65536), parse, { schema: repo, table, mode }, { bytes: 0, rows: 0 });
    return { ...outcome, table };
  } finally {
    await client.end();
  }
}

const q = (table: string) => `"${repo}"."${table}"`;

/** An import job of alice's once it has ended. */
async function job(id: string): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await fetch(`${svc.httpUrl}/api/v1beta/import/${id}`, { headers: { authorization: `Bearer ${alice.key}` } });
    const body = (await res.json()) as Record<string, unknown>;
    if (body.status === 'DONE' || body.status === 'FAILED') return body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ---- the oracle: instants, and the test's own writing of them in every layout ----

interface Instant {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
  /** Microseconds. */
  us: number;
  /** Offset east of UTC, minutes. */
  offset: number;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const pad = (v: number, w = 2) => String(v).padStart(w, '0');

const BOUNDARIES: Instant[] = [
  { y: 2000, mo: 2, d: 29, h: 0, mi: 0, s: 0, us: 0, offset: 0 },
  { y: 1999, mo: 12, d: 31, h: 23, mi: 59, s: 59, us: 999999, offset: 330 },
  { y: 2000, mo: 1, d: 1, h: 0, mi: 0, s: 0, us: 0, offset: -480 },
  { y: 2024, mo: 2, d: 29, h: 12, mi: 0, s: 0, us: 0, offset: 60 },
  { y: 2000, mo: 1, d: 31, h: 0, mi: 30, s: 1, us: 0, offset: -210 },
  { y: 2023, mo: 3, d: 12, h: 2, mi: 30, s: 0, us: 0, offset: 0 },
  { y: 1900, mo: 2, d: 28, h: 23, mi: 59, s: 59, us: 0, offset: 825 },
  { y: 99, mo: 7, d: 4, h: 13, mi: 5, s: 9, us: 500000, offset: -720 },
  { y: 2100, mo: 12, d: 31, h: 12, mi: 59, s: 59, us: 1, offset: 840 },
];

function randomInstants(count: number, seed: number): Instant[] {
  const next = random(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return Array.from({ length: count }, () => {
    // From year 2: a negative offset on 0001-01-01 would be a day BC in UTC.
    const y = int(2, 9999);
    const mo = int(1, 12);
    const last = new Date(Date.UTC(2001, mo, 0)).getUTCDate() + (mo === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 1 : 0);
    return { y, mo, d: int(1, last), h: int(0, 23), mi: int(0, 59), s: int(0, 59), us: next() < 0.5 ? 0 : int(0, 999999), offset: int(-15 * 4, 15 * 4) * 15 };
  });
}

/** `instant`'s day written in `layout`; `variant` picks among the spellings a layout allows. */
function writeDate(layout: DateLayout, i: Instant, variant: number): string {
  const y = pad(i.y, 4);
  const [mm, dd] = variant % 2 ? [pad(i.mo), pad(i.d)] : [String(i.mo), String(i.d)];
  const name = MONTHS[i.mo - 1]!;
  const mon = variant % 3 === 0 ? name : name.slice(0, 3);
  const cased = variant % 4 === 0 ? mon.toUpperCase() : variant % 4 === 1 ? mon.toLowerCase() : mon;
  switch (layout) {
    case 'YYYY/MM/DD': return `${y}/${mm}/${dd}`;
    case 'MM/DD/YYYY': return `${mm}/${dd}/${y}`;
    case 'DD/MM/YYYY': return `${dd}/${mm}/${y}`;
    case 'DD.MM.YYYY': return `${dd}.${mm}.${y}`;
    case 'MM-DD-YYYY': return `${mm}-${dd}-${y}`;
    case 'DD-MM-YYYY': return `${dd}-${mm}-${y}`;
    case 'Mon D YYYY': return `${cased} ${dd} ${y}`;
    case 'Month D, YYYY': return `${cased} ${dd}, ${y}`;
    case 'D Mon YYYY': return `${dd} ${cased} ${y}`;
    case 'DD-Mon-YYYY': return `${dd}-${cased.slice(0, 3)}-${y}`;
  }
}

type Kind = 'date' | 'time24' | 'time12' | 'tz' | 'tz12';

function writeTime(kind: Kind, i: Instant, variant: number): string {
  if (kind === 'date') return '';
  const fraction = i.us ? `.${pad(i.us, 6).replace(/0+$/, '')}` : '';
  const seconds = i.s || fraction || variant % 2 ? `:${pad(i.s)}${fraction}` : '';
  const twelve = kind === 'time12' || kind === 'tz12';
  const hour = twelve ? (i.h % 12 === 0 ? 12 : i.h % 12) : i.h;
  const clock = `${variant % 3 ? pad(hour) : String(hour)}:${pad(i.mi)}${seconds}`;
  const meridiem = twelve ? `${variant % 2 ? ' ' : ''}${[i.h < 12 ? 'AM' : 'PM', i.h < 12 ? 'am' : 'pm'][variant % 2]}` : '';
  if (kind !== 'tz' && kind !== 'tz12') return ` ${clock}${meridiem}`;
  const sign = i.offset < 0 ? '-' : '+';
  const a = Math.abs(i.offset);
  const zone = i.offset === 0 && variant % 2 ? 'Z' : [`${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`, `${sign}${pad(Math.floor(a / 60))}${pad(a % 60)}`][variant % 2]!;
  return ` ${clock}${meridiem}${variant % 3 === 1 || meridiem ? ' ' : ''}${zone}`;
}

/** What Postgres must have stored, as the test's SQL prints it (see `stored`). */
function expected(kind: Kind, i: Instant): string {
  const day = `${pad(i.y, 4)}-${pad(i.mo)}-${pad(i.d)}`;
  if (kind === 'date') return day;
  if (kind !== 'tz' && kind !== 'tz12') return `${day} ${pad(i.h)}:${pad(i.mi)}:${pad(i.s)}.${pad(i.us, 6)}`;
  const t = new Date(0);
  t.setUTCFullYear(i.y, i.mo - 1, i.d);
  t.setUTCHours(i.h, i.mi - i.offset, i.s, 0);
  return `${pad(t.getUTCFullYear(), 4)}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())} ${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}.${pad(i.us, 6)}`;
}

const TYPE_OF: Record<Kind, string> = {
  date: 'date',
  time24: 'timestamp without time zone',
  time12: 'timestamp without time zone',
  tz: 'timestamp with time zone',
  tz12: 'timestamp with time zone',
};

/** SQL printing a stored value as `expected` does, whatever the session's settings. */
function stored(column: string, kind: Kind): string {
  const c = pg.escapeIdentifier(column);
  if (kind === 'date') return `to_char(${c}, 'YYYY-MM-DD')`;
  if (kind === 'tz' || kind === 'tz12') return `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')`;
  return `to_char(${c}, 'YYYY-MM-DD HH24:MI:SS.US')`;
}

const LAYOUTS = Object.keys(DATE_LAYOUTS) as DateLayout[];
const KINDS: Kind[] = ['date', 'time24', 'time12', 'tz', 'tz12'];

describe('every layout stores exactly the instant it denotes', () => {
  const instants = [...BOUNDARIES, ...randomInstants(300, 28)];
  // Years before 1000 are written with four digits; a day in a layout with names keeps its day first or month first.
  const csv = (cells: string[]) => cells.map((v) => (v.includes(',') ? `"${v}"` : v)).join(',');
  const header = LAYOUTS.flatMap((l) => KINDS.map((k) => `${l} ${k}`));
  const cells = instants.map((i, r) => LAYOUTS.flatMap((l) => KINDS.map((k) => writeDate(l, i, r + k.length) + writeTime(k, i, r + l.length))));
  // Column n numbers the lines: rows are read back in its order.
  const text = [csv(['n', ...header]), ...cells.map((c, r) => csv([String(r), ...c]))].join('\n') + '\n';

  test.each([
    ['directly', false],
    ['row by row', true],
  ])('%s, under DateStyle SQL, DMY and TimeZone America/New_York', async (_, rowByRow) => {
    const got = await load(text, { rowByRow });
    expect(got.load?.path).toBe(rowByRow ? 'rows' : 'direct');
    const types = await columnsOf(svc, repo, got.table);
    const wrong: string[] = [];
    for (const layout of LAYOUTS) {
      for (const kind of KINDS) {
        const name = `${layout} ${kind}`;
        if (types[name] !== TYPE_OF[kind]) wrong.push(`${name}: ${types[name]}`);
        const column = got.columns.find((c) => c.name === name)!;
        expect(column.written, name).toEqual(kind === 'time12' || kind === 'tz12' ? { layout, clock12: true } : { layout });
        const values = await rows(svc, `SELECT ${stored(name, kind)} FROM ${q(got.table)} ORDER BY n`);
        const k = header.indexOf(name);
        instants.forEach((i, r) => {
          if (values[r]![0] !== expected(kind, i)) wrong.push(`${name}, line ${r + 2} ${JSON.stringify(cells[r]![k])}: stored ${values[r]![0]}, expected ${expected(kind, i)}`);
        });
      }
    }
    expect(wrong).toEqual([]);
  }, 60_000);
});

describe('numbers with thousands separators', () => {
  test('BIGINT, NUMERIC and DOUBLE PRECISION by the usual rules, exact digits, directly and row by row alike', async () => {
    const text =
      'int,dec,huge,mixed,negative\n' +
      '"1,234,567","1,234.5","12,345,678,901,234,567,890",999,"-9,223,372,036,854,775,808"\n' +
      '"9,223,372,036,854,775,807",0.25,1.5,"1,000",-1\n' +
      '0,"999,999.999999",-2,-7,"-1,000"\n';
    for (const rowByRow of [false, true]) {
      const got = await load(text, { rowByRow });
      expect(await columnsOf(svc, repo, got.table)).toEqual({ int: 'bigint', dec: 'double precision', huge: 'numeric', mixed: 'bigint', negative: 'bigint' });
      expect(got.columns.map((c) => c.written?.layout)).toEqual(['1,234,567', '1,234,567', '1,234,567', '1,234,567', '1,234,567']);
      expect(await rows(svc, `SELECT * FROM ${q(got.table)}`)).toEqual([
        ['1234567', '1234.5', '12345678901234567890', '999', '-9223372036854775808'],
        ['9223372036854775807', '0.25', '1.5', '1000', '-1'],
        ['0', '999999.999999', '-2', '-7', '-1000'],
      ]);
    }
  });

  test('grouped and bare numbers of four digits or more together, or decimal commas, stay TEXT as written', async () => {
    const got = await load('a;b\n"1,234";2,5\n5678;4,5\n', { fileName: 'x.txt' });
    expect(await columnsOf(svc, repo, got.table)).toEqual({ a: 'text', b: 'text' });
    expect(await rows(svc, `SELECT * FROM ${q(got.table)}`)).toEqual([
      ['1,234', '2,5'],
      ['5678', '4,5'],
    ]);
  });
});

describe('what stays TEXT, and why the preview says', () => {
  test('no day over 12: month first or day first cannot be told; two layouts, or two clocks, are not one', async () => {
    const got = await load('ambiguous,two layouts,two clocks\n01/02/2000,Jan 1 2000,2000/01/01 13:00\n03/04/2000,2000-01-02,2000/01/01 1:00 PM\n');
    expect(got.columns).toEqual([
      { name: 'ambiguous', type: 'text', ambiguous: ['MM/DD/YYYY', 'DD/MM/YYYY'] },
      { name: 'two layouts', type: 'text' },
      { name: 'two clocks', type: 'text' },
    ]);
    expect(await rows(svc, `SELECT * FROM ${q(got.table)}`)).toEqual([
      ['01/02/2000', 'Jan 1 2000', '2000/01/01 13:00'],
      ['03/04/2000', '2000-01-02', '2000/01/01 1:00 PM'],
    ]);
  });

  test('the preview names the layout with an example, and the ambiguity', async () => {
    const file = 'Date,Close,Volume,Day\nJan 1 2000,"1,394.46","1,234,567",01/02/2000\nFeb 1 2000,"1,366.42",999,03/04/2000\n';
    const answer = await upload(svc, alice.key, {}, { name: 'stocks.csv', data: file }, '/import/preview');
    expect(answer.status).toBe(200);
    expect(answer.body.columns).toEqual([
      { name: 'Date', type: 'DATE', written: 'Mon D YYYY', example: 'Jan 31 2000' },
      { name: 'Close', type: 'DOUBLE PRECISION', written: '1,234,567', example: '1,234,567.89' },
      { name: 'Volume', type: 'BIGINT', written: '1,234,567', example: '1,234,567' },
      { name: 'Day', type: 'TEXT', ambiguous: ['MM/DD/YYYY', 'DD/MM/YYYY'] },
    ]);
  });

  test('the wizard turns a column back to TEXT: every value as written; or settles an ambiguity by choosing the layout', async () => {
    const file = 'Date,Day\nJan 1 2000,01/02/2000\nFeb 29 2000,03/04/2000\n';
    const chosen = JSON.stringify([{ type: 'TEXT' }, { type: 'DATE', written: 'dd/mm/yyyy' }]);
    const answer = await upload(svc, alice.key, { repo, table_name: 'wizard', columns: chosen }, { name: 'stocks.csv', data: file });
    expect(answer.body.error ?? null, JSON.stringify(answer.body)).toBeNull();
    expect(answer.body.columns).toEqual([
      { name: 'Date', type: 'TEXT' },
      { name: 'Day', type: 'DATE', written: 'DD/MM/YYYY', example: '31/01/2000' },
    ]);
    expect(await rows(svc, `SELECT "Date", "Day"::text FROM ${q('wizard')}`)).toEqual([
      ['Jan 1 2000', '2000-02-01'],
      ['Feb 29 2000', '2000-04-03'],
    ]);
  });
});

describe('what Postgres still parses itself reads the same under any session', () => {
  test('a DATE chosen for dates in no one layout reads them month first; a time without offset chosen as TIMESTAMP WITH TIME ZONE is UTC', async () => {
    for (const rowByRow of [false, true]) {
      const got = await load('day,at\n03/04/2000,2023-03-12 02:30\n2000-01-31,2023-07-01 00:00\n', { rowByRow, columns: parseOverrides('[{"type": "DATE"}, {"type": "TIMESTAMP WITH TIME ZONE"}]') });
      expect(await rows(svc, `SELECT to_char(day, 'YYYY-MM-DD'), to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') FROM ${q(got.table)} ORDER BY day`)).toEqual([
        ['2000-01-31', '2023-07-01 00:00'],
        ['2000-03-04', '2023-03-12 02:30'],
      ]);
    }
  });
});

describe('real shapes through the endpoint, under a role whose own settings would misread them', () => {
  test('stocks, flights, weather, movies: typed and exact', async () => {
    const dora = await svc.user('dora');
    const doraRepo = `${dora.name}/charts`;
    await svc.control.createRepo(doraRepo);
    await svc.control.admin.query(`ALTER ROLE ${pg.escapeIdentifier(dora.name)} SET DateStyle = 'German, DMY'; ALTER ROLE ${pg.escapeIdentifier(dora.name)} SET TimeZone = 'Asia/Kathmandu'`);
    const files: [string, string][] = [
      ['stocks.csv', 'symbol,date,price\nMSFT,Jan 1 2000,39.81\nMSFT,Feb 1 2000,36.35\nAAPL,Mar 1 2010,"1,223.5"\n'],
      ['flights.csv', 'date,delay,distance,origin\n2015/01/01 01:00:00,14,405,MCI\n2015/12/31 23:59:00,-3,"1,405",TPA\n'],
      ['weather.csv', 'DATE,TEMP\n2001/01/01 06:55,-2.8\n2001/12/31 23:55,4.4\n'],
      ['movies.csv', 'Title,Release Date,Worldwide Gross\nThe Land Girls,"Jun 12, 1998","146,083"\nFirst Love,"August 7, 1998","10,876"\n'],
    ];
    const results: Record<string, unknown> = {};
    for (const [name, data] of files) {
      const answer = await upload(svc, dora.key, { repo: doraRepo }, { name, data });
      expect(answer.body.error ?? null, JSON.stringify(answer.body)).toBeNull();
      const table = name.replace('.csv', '');
      results[table] = { types: await columnsOf(svc, doraRepo, table), first: (await rows(svc, `SELECT * FROM "${doraRepo}"."${table}" LIMIT 1`))[0] };
    }
    expect(results).toEqual({
      stocks: { types: { symbol: 'text', date: 'date', price: 'double precision' }, first: ['MSFT', '2000-01-01', '39.81'] },
      flights: { types: { date: 'timestamp without time zone', delay: 'bigint', distance: 'bigint', origin: 'text' }, first: ['2015-01-01 01:00:00', '14', '405', 'MCI'] },
      weather: { types: { DATE: 'timestamp without time zone', TEMP: 'double precision' }, first: ['2001-01-01 06:55:00', '-2.8'] },
      movies: { types: { Title: 'text', 'Release Date': 'date', 'Worldwide Gross': 'bigint' }, first: ['The Land Girls', '1998-06-12', '146083'] },
    });
    expect(await rows(svc, `SELECT min(date)::text, max(date)::text FROM "${doraRepo}".stocks`)).toEqual([['2000-01-01', '2010-03-01']]);
  });
});

/** A header and `count` data lines (data line i is file line i + 1). */
function big(header: string, line: (i: number) => string, count: number): string {
  const out = [header];
  for (let i = 1; i <= count; i++) out.push(line(i));
  return out.join('\n') + '\n';
}

/** The first data line that starts `bytes` into the data lines of `line`. */
function lineAfter(bytes: number, line: (i: number) => string): number {
  let i = 0;
  for (let length = 0; length <= bytes; ) length += Buffer.byteLength(line(++i)) + 1;
  return i;
}

describe('a layout chosen by the caller that a value does not fit', () => {
  const dayFirst = (i: number) => `${i},${1 + (i % 28)}/${1 + (i % 12)}/2000`;
  const chosen = JSON.stringify([{}, { type: 'DATE', written: 'DD/MM/YYYY' }]);
  const past = lineAfter(SAMPLE_BYTES * 1.2, dayFirst);

  test.each([
    ['in the first rows', 5],
    ['past the sample of the direct load', past],
  ])('%s: the upload fails naming its line, and leaves nothing behind', async (_, bad) => {
    const text = big('id,day', (i) => (i === bad ? `${i},2000-01-31` : dayFirst(i)), past + 100);
    const answer = await upload(svc, alice.key, { repo, table_name: `bad${bad}`, columns: chosen, async: 'true' }, { name: 'days.csv', data: text });
    expect(answer.status).toBe(202);
    expect(await job(answer.body.id as string)).toMatchObject({
      status: 'FAILED',
      error: { code: '22007', line: bad + 1, message: `line ${bad + 1}, column "day": "2000-01-31" is not written DD/MM/YYYY` },
    });
    expect(await columnsOf(svc, repo, `bad${bad}`)).toEqual({});
    expect(await leftovers(svc)).toEqual([]);
  });

  test('replace keeps the old table and its rows; append adds no row', async () => {
    await load('id,day\n1,31/01/2000\n', {}, 'create', 'kept');
    const text = big('id,day', (i) => (i === 7 ? `${i},"1,000"` : dayFirst(i)), 10);
    for (const mode of ['replace', 'append']) {
      const answer = await upload(svc, alice.key, { repo, table_name: 'kept', mode, columns: mode === 'append' ? JSON.stringify([{}, { written: 'DD/MM/YYYY' }]) : chosen }, { name: 'days.csv', data: text });
      expect(answer.body.error, mode).toMatchObject({ code: '22007', message: 'line 8, column "day": "1,000" is not written DD/MM/YYYY' });
      expect(await rows(svc, `SELECT id::text, day::text FROM ${q('kept')}`), mode).toEqual([['1', '2000-01-31']]);
    }
    expect(await leftovers(svc)).toEqual([]);
  });

  test('thousands separators chosen: a bare number of four digits fails it', async () => {
    const answer = await upload(svc, alice.key, { repo, table_name: 'grouped', columns: JSON.stringify([{ type: 'NUMERIC(12,2)', written: '1,234,567' }]) }, { name: 'n.csv', data: 'n\n"1,234.5"\n1234.5\n' });
    expect(answer.body.error).toMatchObject({ code: '22P02', message: 'line 3, column "n": "1234.5" is not written 1,234,567' });
  });

  test('a layout a type cannot read is refused before anything is read', async () => {
    const answer = await upload(svc, alice.key, { repo, table_name: 'never', columns: JSON.stringify([{ type: 'BIGINT', written: 'Mon D YYYY' }]) }, { name: 'n.csv', data: 'n\n1\n' });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: '22023', message: 'column 1 is BIGINT: its values cannot be read as written Mon D YYYY' });
  });
});

describe('guesses from the first MiB that the rest contradicts', () => {
  test('numbers under 1,000 in the sample, then one grouped: started over, every value exact', async () => {
    const value = (i: number) => `${i},${i % 1000}`;
    const after = lineAfter(SAMPLE_BYTES * 1.1, value);
    const count = after + 10;
    const got = await load(big('id,n', (i) => (i === after ? `${i},"12,345"` : value(i)), count));
    expect(got.load).toEqual({ path: 'direct', restarts: 1, converted: 0 });
    expect(got.columns[1]).toEqual({ name: 'n', type: 'bigint', written: { layout: '1,234,567' } });
    const sum = Array.from({ length: count }, (_, k) => (k + 1 === after ? 12345 : (k + 1) % 1000)).reduce((a, b) => a + b, 0);
    expect(await rows(svc, `SELECT sum(n)::text, max(n)::text, count(*)::text FROM ${q(got.table)}`)).toEqual([[String(sum), '12345', String(count)]]);
  });

  test('dates that read both ways in the sample, settled later: loaded as text, converted in that layout at the end', async () => {
    const value = (i: number) => `${i},${1 + (i % 12)}/${1 + (i % 12)}/2000`;
    const after = lineAfter(SAMPLE_BYTES * 1.1, value);
    const got = await load(big('id,day', (i) => (i === after ? `${i},25/12/2000` : value(i)), after + 10));
    expect(got.load).toEqual({ path: 'direct', restarts: 0, converted: 1 });
    expect(got.columns[1]).toEqual({ name: 'day', type: 'date', written: { layout: 'DD/MM/YYYY' } });
    expect(await rows(svc, `SELECT to_char(day, 'YYYY-MM-DD') FROM ${q(got.table)} WHERE id IN (5, ${after}) ORDER BY id`)).toEqual([['2000-06-06'], ['2000-12-25']]);
  });

  test('the preview counts values a chosen layout refuses', async () => {
    const chosen = parseOverrides(JSON.stringify([{ type: 'DATE', written: 'MM/DD/YYYY' }]));
    expect(chosen[0]).toEqual({ name: undefined, type: 'date', written: 'MM/DD/YYYY' });
    const answer = await upload(svc, alice.key, { columns: JSON.stringify([{ type: 'TIMESTAMP', written: 'MM/DD/YYYY' }]) }, { name: 'd.csv', data: 'd\n12/31/2000 1:00 PM\n31/12/2000 1:00 PM\n' }, '/import/preview');
    expect(answer.status).toBe(200);
    expect(answer.body.columns).toEqual([{ name: 'd', type: 'TIMESTAMP WITHOUT TIME ZONE', written: 'MM/DD/YYYY', example: '01/31/2000 13:30', invalid: 1 }]);
  });
});
