/**
 * The upload wizard's overrides (the `columns` field): names and types chosen per column, on
 * create, replace and append, through the real endpoint into real tables; a value the chosen
 * type refuses fails the whole upload with its line and leaves nothing behind. Also the preview
 * with chosen types, and the direct load (files past its sample) keeping chosen types.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SAMPLE_BYTES } from '../../src/ingest/direct.js';
import { importUpload, type ImportMode, type ImportOutcome, type ParseOptions } from '../../src/ingest/index.js';
import { parseOverrides } from '../../src/ingest/overrides.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { chunks } from '../unit/ingest/helpers.js';
import { columnsOf, leftovers, rows, upload } from './ingest-helpers.js';

let svc: TestService;
let alice: { name: string; key: string };
let repo: string;
beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  repo = `${alice.name}/wizard`;
  await svc.control.createRepo(repo);
});
afterAll(() => svc.stop());

/** 60 data rows (file lines 2–61): a date, a zip with leading zeros, an amount, a reference that is 'abc' on line 57. */
function orders(badLine = 57): string {
  const lines = ['order_date,zip,amount,ref'];
  for (let line = 2; line <= 61; line++) {
    const day = String(1 + (line % 28)).padStart(2, '0');
    lines.push(`2024-03-${day},${String(line * 37).padStart(5, '0')},${line}.5,${line === badLine ? 'abc' : 1000 + line}`);
  }
  return lines.join('\n') + '\n';
}

const columns = (entries: unknown[]) => JSON.stringify(entries);

async function job(id: string): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await fetch(`${svc.httpUrl}/api/v1beta/import/${id}`, { headers: { authorization: `Bearer ${alice.key}` } });
    const body = (await res.json()) as Record<string, unknown>;
    if (body.status === 'DONE' || body.status === 'FAILED') return body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('create with overrides', () => {
  test('names and types as chosen: zip kept as TEXT with its zeros, a renamed column, amount NUMERIC(10,2)', async () => {
    const file = orders(0);
    const chosen = columns([{}, { type: 'text' }, { name: 'Total €', type: 'NUMERIC(10, 2)' }, { name: 'reference', type: 'TEXT' }]);
    const answer = await upload(svc, alice.key, { repo, table_name: 'orders', columns: chosen }, { name: 'orders.csv', data: file });
    expect(answer.body.error ?? null, JSON.stringify(answer.body)).toBeNull();
    expect(answer.body).toMatchObject({
      status: 'DONE',
      rows: 60,
      columns: [
        { name: 'order_date', type: 'DATE' },
        { name: 'zip', type: 'TEXT' },
        { name: 'Total €', type: 'NUMERIC(10,2)' },
        { name: 'reference', type: 'TEXT' },
      ],
    });
    expect(await columnsOf(svc, repo, 'orders')).toEqual({ order_date: 'date', zip: 'text', 'Total €': 'numeric(10,2)', reference: 'text' });
    const data = await rows(svc, `SELECT * FROM "${repo}".orders ORDER BY "Total €"`);
    expect(data.length).toBe(60);
    expect(data[0]).toEqual(['2024-03-03', '00074', '2.50', '1002']);
    expect(data[1]).toEqual(['2024-03-04', '00111', '3.50', '1003']);
    // The same file without overrides: the reference is a number there.
    const plain = await upload(svc, alice.key, { repo, table_name: 'orders plain' }, { name: 'orders.csv', data: file });
    expect(plain.body.status).toBe('DONE');
    expect(await columnsOf(svc, repo, 'orders plain')).toEqual({ order_date: 'date', zip: 'text', amount: 'double precision', ref: 'bigint' });
  });

  test('a value the chosen type refuses fails the job with its line (57); nothing is created', async () => {
    const chosen = columns([{}, {}, {}, { type: 'BIGINT' }]);
    const answer = await upload(svc, alice.key, { repo, table_name: 'bad refs', columns: chosen }, { name: 'orders.csv', data: orders() });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: '22P02', message: 'line 57, column "ref": invalid input syntax for type bigint: "abc"', detail: 'the value "abc" is not a valid bigint' });
    expect(await columnsOf(svc, repo, 'bad refs')).toEqual({});
    // The job records the line.
    const later = await upload(svc, alice.key, { repo, table_name: 'bad refs', columns: chosen, async: 'true' }, { name: 'orders.csv', data: orders() });
    expect(later.status).toBe(202);
    expect(await job(later.body.id as string)).toMatchObject({ status: 'FAILED', error: { code: '22P02', line: 57 } });
    expect(await columnsOf(svc, repo, 'bad refs')).toEqual({});
    expect(await leftovers(svc)).toEqual([]);
  });

  test('a value too large for NUMERIC(4,1) names its line too', async () => {
    const answer = await upload(svc, alice.key, { repo, table_name: 'small amounts', columns: columns([{}, {}, { type: 'numeric(4,1)' }, {}]) }, { name: 'x.csv', data: 'a,b,amount,c\n1,2,99.5,3\n1,2,1000.5,3\n' });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: '22003' });
    expect(answer.body.error!.message).toMatch(/^line 3, column "amount": numeric field overflow/);
    expect(await columnsOf(svc, repo, 'small amounts')).toEqual({});
  });

  test('the row-by-row path (NDJSON) takes the same overrides; a DATE override keeps an inferred layout', async () => {
    const file = '{"when": "03/31/2024", "n": "7", "id": "6b1c5ad2-6a8e-4a53-9a37-0d3a3bb7e0a2"}\n{"when": "12/01/2024", "n": "08", "id": null}\n';
    const answer = await upload(svc, alice.key, { repo, table_name: 'events', columns: columns([{ type: 'DATE' }, { name: 'count', type: 'INTEGER' }, { type: 'UUID' }]) }, { name: 'e.ndjson', data: file });
    expect(answer.body.error ?? null, JSON.stringify(answer.body)).toBeNull();
    expect(await columnsOf(svc, repo, 'events')).toEqual({ when: 'date', count: 'integer', id: 'uuid' });
    expect(await rows(svc, `SELECT * FROM "${repo}".events ORDER BY "when"`)).toEqual([
      ['2024-03-31', '7', '6b1c5ad2-6a8e-4a53-9a37-0d3a3bb7e0a2'],
      ['2024-12-01', '8', null],
    ]);
  });

  test('without a header, the names come from columns', async () => {
    const answer = await upload(svc, alice.key, { repo, table_name: 'headless', header: 'none', columns: columns([{ name: 'id' }, { name: 'label', type: 'TEXT' }]) }, { name: 'h.csv', data: '1,2\n3,4\n' });
    expect(answer.body.status).toBe('DONE');
    expect(await columnsOf(svc, repo, 'headless')).toEqual({ id: 'bigint', label: 'text' });
  });
});

describe('refused overrides answer 400', () => {
  const refused = async (chosen: string, file = 'a,b\n1,2\n', table = 'never') => {
    const answer = await upload(svc, alice.key, { repo, table_name: table, columns: chosen }, { name: 'x.csv', data: file });
    expect(await columnsOf(svc, repo, table)).toEqual({});
    return { status: answer.status, error: answer.body.error! };
  };

  test('an unknown type names the column and the types allowed', async () => {
    const { status, error } = await refused(columns([{}, { name: 'price', type: 'MONEY' }]));
    expect(status).toBe(400);
    expect(error.code).toBe('22023');
    expect(error.message).toBe('unknown type "MONEY" for column 2 ("price")');
    expect((error as { hint?: string }).hint).toBe('the types a column may be given: TEXT, BIGINT, INTEGER, NUMERIC, NUMERIC(p,s), DOUBLE PRECISION, BOOLEAN, DATE, TIMESTAMP, TIMESTAMP WITH TIME ZONE, JSONB, UUID');
    expect((await refused(columns([{ type: 'numeric(1001,2)' }, {}]))).error.message).toBe('unknown type "numeric(1001,2)" for column 1');
    expect((await refused(columns([{ type: 'text; DROP TABLE x' }, {}]))).error.code).toBe('22023');
  });

  test('the wrong number of entries names the file\'s columns', async () => {
    const { status, error } = await refused(columns([{ type: 'TEXT' }]));
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: '22023', message: 'columns has 1 entries; the file has 2 columns', hint: 'one entry per column of the file, in order: "a", "b"' });
  });

  test('invalid and repeated names are named', async () => {
    const bad = await refused(columns([{ name: ' padded' }, { name: 'xmin' }]));
    expect(bad).toMatchObject({ status: 400, error: { code: '42602', message: 'invalid column names in columns: " padded", "xmin"' } });
    const twice = await refused(columns([{ name: 'x' }, { name: 'x' }]));
    expect(twice).toMatchObject({ status: 400, error: { code: '22023', message: 'columns gives more than one column the name "x"' } });
    // A new name that another, unrenamed column of the file already has (known once the file is read).
    const clash = await refused(columns([{ name: 'b' }, {}]));
    expect(clash).toMatchObject({ status: 400, error: { code: '22023', message: 'more than one column would be named "b"' } });
  });

  test('not JSON, not an array, unknown keys', async () => {
    expect((await refused('[{"name": }]')).error).toMatchObject({ code: '22023', message: 'columns is not valid JSON' });
    expect((await refused('{"name": "a"}')).error).toMatchObject({ code: '22023', message: 'columns is not a JSON array' });
    expect((await refused(columns([{ nullable: false }, {}]))).error).toMatchObject({ code: '22023', message: 'columns[0] has an unknown key "nullable"' });
  });
});

describe('replace and append with overrides', () => {
  beforeAll(async () => {
    const made = await upload(svc, alice.key, { repo, table_name: 'ledger', columns: columns([{ name: 'day' }, {}, { name: 'amount', type: 'NUMERIC(10,2)' }, { name: 'ref', type: 'TEXT' }]) }, { name: 'l.csv', data: 'd,zip,amt,r\n2024-01-01,01234,1.5,A1\n' });
    expect(made.body.status).toBe('DONE');
  });
  const ledger = () => rows(svc, `SELECT * FROM "${repo}".ledger ORDER BY day`);
  const before = [['2024-01-01', '01234', '1.50', 'A1']];

  test('append: the new names pick the table columns; a bad value appends no row', async () => {
    const into = columns([{ name: 'day' }, {}, { name: 'amount' }, { name: 'ref' }]);
    const bad = await upload(svc, alice.key, { repo, table_name: 'ledger', mode: 'append', columns: into }, { name: 'l.csv', data: 'when,zip,total,code\n2024-01-02,02345,2.25,B2\n2024-01-03,03456,lots,C3\n' });
    expect(bad.status).toBe(400);
    expect(bad.body.error!.message).toMatch(/^line 3, column "amount": invalid input syntax for type numeric: "lots"/);
    expect(await ledger()).toEqual(before);
    const ok = await upload(svc, alice.key, { repo, table_name: 'ledger', mode: 'append', columns: into }, { name: 'l.csv', data: 'when,zip,total,code\n2024-01-02,02345,2.25,B2\n' });
    expect(ok.body).toMatchObject({ status: 'DONE', rows: 1 });
    expect(await ledger()).toEqual([...before, ['2024-01-02', '02345', '2.25', 'B2']]);
    await svc.control.admin.query(`DELETE FROM "${repo}".ledger WHERE day > '2024-01-01'`);
  });

  test('append: a name the table lacks, or a type other than the table\'s, is refused before the file is read', async () => {
    const unknown = await upload(svc, alice.key, { repo, table_name: 'ledger', mode: 'append', columns: columns([{ name: 'nope' }, {}, {}, {}]) }, { name: 'l.csv', data: 'day,zip,amount,ref\n2024-01-09,1,2,3\n' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: '42703', message: 'column "nope" of the file is not a column of table "ledger"' });
    const retyped = await upload(svc, alice.key, { repo, table_name: 'ledger', mode: 'append', columns: columns([{}, {}, { name: 'amount', type: 'DOUBLE PRECISION' }, {}]) }, { name: 'l.csv', data: 'day,zip,amount,ref\n2024-01-09,1,2,3\n' });
    expect(retyped.status).toBe(400);
    expect(retyped.body.error).toMatchObject({ code: '42804', message: 'column "amount" of table "ledger" is NUMERIC(10,2), not DOUBLE PRECISION' });
    // The same type as the table's is fine.
    const same = await upload(svc, alice.key, { repo, table_name: 'ledger', mode: 'append', columns: columns([{}, {}, { type: 'numeric(10,2)' }, {}]) }, { name: 'l.csv', data: 'day,zip,amount,ref\n2024-01-09,1,2,3\n' });
    expect(same.body).toMatchObject({ status: 'DONE', rows: 1 });
    await svc.control.admin.query(`DELETE FROM "${repo}".ledger WHERE day > '2024-01-01'`);
    expect(await ledger()).toEqual(before);
  });

  test('replace: a bad value keeps the old table and rows; a good file swaps in the chosen schema', async () => {
    const chosen = columns([{}, {}, {}, { type: 'BIGINT' }]);
    const bad = await upload(svc, alice.key, { repo, table_name: 'ledger', mode: 'replace', columns: chosen }, { name: 'l.csv', data: orders() });
    expect(bad.status).toBe(400);
    expect(bad.body.error!.message).toMatch(/^line 57, column "ref"/);
    expect(await columnsOf(svc, repo, 'ledger')).toEqual({ day: 'date', zip: 'text', amount: 'numeric(10,2)', ref: 'text' });
    expect(await ledger()).toEqual(before);
    const good = await upload(svc, alice.key, { repo, table_name: 'ledger', mode: 'replace', columns: chosen }, { name: 'l.csv', data: orders(0) });
    expect(good.body).toMatchObject({ status: 'DONE', rows: 60 });
    expect(await columnsOf(svc, repo, 'ledger')).toEqual({ order_date: 'date', zip: 'text', amount: 'double precision', ref: 'bigint' });
    expect(await leftovers(svc)).toEqual([]);
  });
});

test('preview with columns: the chosen names and types, and how many previewed values each refuses', async () => {
  const file = 'id,code,score\n1,0042,1.5\n2,x7,2\n3, 9,high\n';
  const p = await upload(svc, alice.key, { columns: columns([{ name: 'key', type: 'UUID' }, { type: 'BIGINT' }, { type: 'NUMERIC(3,1)' }]) }, { name: 'p.csv', data: file }, '/import/preview');
  expect(p.status).toBe(200);
  expect(p.body.columns).toEqual([
    { name: 'key', type: 'UUID', invalid: 3 },
    // Postgres reads '0042' and ' 9' as bigint; 'x7' it does not.
    { name: 'code', type: 'BIGINT', invalid: 1 },
    { name: 'score', type: 'NUMERIC(3,1)', invalid: 1 },
  ]);
  const plain = await upload(svc, alice.key, {}, { name: 'p.csv', data: file }, '/import/preview');
  expect(plain.body.columns).toEqual([
    { name: 'id', type: 'BIGINT' },
    { name: 'code', type: 'TEXT' },
    { name: 'score', type: 'TEXT' },
  ]);
});

describe('the direct load keeps chosen types past its sample', () => {
  let n = 0;
  async function load(text: string, chosen: string, mode: ImportMode = 'create'): Promise<ImportOutcome & { table: string }> {
    const table = `big${n++}`;
    const client = new pg.Client({ connectionString: svc.config.upstreamUrl });
    await client.connect();
    try {
      await client.query(`SET ROLE ${pg.escapeIdentifier(alice.name)}`);
      const opts: ParseOptions = { header: 'auto', nullValues: [''], encoding: 'utf-8', fileName: 'x.csv', columns: parseOverrides(chosen) };
      return { ...(await importUpload(client, chunks(text, 65536), opts, { schema: repo, table, mode }, { bytes: 0, rows: 0 })), table };
    } finally {
      await client.end();
    }
  }
  const count = Math.ceil((SAMPLE_BYTES * 1.4) / 14);
  const big = (line: (i: number) => string) => ['id,v,w', ...Array.from({ length: count }, (_, k) => line(k + 1))].join('\n') + '\n';

  test('a chosen TEXT column of integers and a chosen NUMERIC(12,2): no restart; an unchosen column still restarts', async () => {
    const late = count - 10;
    const got = await load(
      big((i) => `${i},${i},${i === late ? '0.5' : i}`),
      columns([{ type: 'TEXT' }, { name: 'value', type: 'numeric(12,2)' }, {}]),
    );
    expect(got.load).toEqual({ path: 'direct', restarts: 1, converted: 0 });
    expect(await columnsOf(svc, repo, got.table)).toEqual({ id: 'text', value: 'numeric(12,2)', w: 'double precision' });
    expect(await rows(svc, `SELECT count(*), max(value) FROM "${repo}"."${got.table}"`)).toEqual([[String(count), `${count}.00`]]);
  });

  test('a value past the sample the chosen type refuses: the whole load fails with its line', async () => {
    const bad = count - 3;
    await expect(load(big((i) => `${i},${i === bad ? 'n/a' : i},${i}`), columns([{}, { type: 'INTEGER' }, {}]))).rejects.toMatchObject({
      code: '22P02',
      message: `line ${bad + 1}, column "v": invalid input syntax for type integer: "n/a"`,
    });
    expect(await leftovers(svc)).toEqual([]);
  });
});
