/**
 * Async queries over REST against a real Postgres: `POST /query/` with `"async": true` answers 202
 * with the query's id and Location; `GET /queries/<id>` polls it to its end; its 1,000,000-row
 * result is paged through in JSON, NDJSON and CSV with every value exact; `wait_ms` answers as
 * without async when the query ends in time; a cancel leaves no statement in Postgres; another
 * user's query answers 404 everywhere; the history lists sync and async queries, and recording
 * it adds no round trip to a `POST /query/`.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let admin: pg.Client;
let alice: { name: string; key: string };
let bob: { name: string; key: string };

interface Info {
  id: string;
  status: string;
  async: boolean;
  query_string: string;
  submitted_at: string;
  started_at: string | null;
  finished_at: string | null;
  row_count: number | null;
  command: string | null;
  rows_stored: number;
  result_expires_at: string | null;
  fields: Record<string, string> | null;
  error: { code: string; message: string } | null;
}

async function submit(key: string, sql: string, extra: Record<string, unknown> = {}): Promise<{ status: number; location: string | null; body: Record<string, unknown> }> {
  const res = await srv.call(key, 'POST', '/query/', { query_string: sql, async: true, ...extra });
  return { status: res.status, location: res.headers.get('location'), body: (await res.json()) as Record<string, unknown> };
}

async function info(key: string, id: string): Promise<Info> {
  const res = await srv.call(key, 'GET', `/queries/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Info;
}

/** Polls `id` until it has ended; returns its state. */
async function settled(key: string, id: string, timeoutMs = 60_000): Promise<Info> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const q = await info(key, id);
    if (!['queued', 'running'].includes(q.status)) return q;
    if (Date.now() > deadline) throw new Error(`query ${id} still ${q.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function result(key: string, id: string, query = '', accept = 'application/json'): Promise<{ status: number; text: string; type: string | null }> {
  const res = await srv.call(key, 'GET', `/queries/${id}/result${query}`, undefined, { accept });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

async function activeStatements(user: string): Promise<string[]> {
  const { rows } = await admin.query<{ query: string }>("SELECT query FROM pg_stat_activity WHERE usename = $1 AND state <> 'idle'", [user]);
  return rows.map((r) => r.query);
}

beforeAll(async () => {
  srv = await startRest();
  admin = new pg.Client({ connectionString: srv.config.upstreamUrl });
  await admin.connect();
  alice = await srv.user('alice');
  bob = await srv.user('bob');
  expect((await srv.query(alice.key, `CREATE SCHEMA "${alice.name}/sales"`)).status).toBe(200);
  expect((await srv.query(alice.key, `CREATE TABLE "${alice.name}/sales".t (id int, amount numeric(10,2), note text)`)).status).toBe(200);
  expect((await srv.query(alice.key, `INSERT INTO "${alice.name}/sales".t VALUES (1, 12.50, 'a,b'), (2, NULL, ''), (3, 0.10, NULL)`)).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await admin?.end();
  await srv?.stop();
});

describe('an async query', () => {
  it('answers 202 with its id and Location, runs in the background and keeps its result', async () => {
    const sql = `SELECT id, amount, note FROM "${alice.name}/sales".t ORDER BY id`;
    const sent = await submit(alice.key, sql);
    expect(sent.status).toBe(202);
    const id = sent.body.id as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent.location).toBe(`/api/v1beta/queries/${id}`);
    expect(sent.body).toMatchObject({ query_string: sql, status_url: `/api/v1beta/queries/${id}` });
    expect(['queued', 'running']).toContain(sent.body.status);
    expect(Date.parse(sent.body.submitted_at as string)).toBeGreaterThan(Date.now() - 60_000);

    const done = await settled(alice.key, id);
    expect(done).toMatchObject({ id, status: 'succeeded', async: true, command: 'SELECT', row_count: 3, rows_stored: 3, error: null, fields: { id: 'INTEGER', amount: 'NUMERIC(10,2)', note: 'TEXT' } });
    expect(Date.parse(done.finished_at!)).toBeGreaterThanOrEqual(Date.parse(done.started_at!));
    expect(Date.parse(done.result_expires_at!) - Date.parse(done.finished_at!)).toBe(srv.config.asyncResultTtlMs);

    const json = await result(alice.key, id);
    expect(json.status).toBe(200);
    // Byte for byte what POST /query/ answers.
    expect(json.text).toBe((await srv.query(alice.key, sql)).text);
    expect(json.text).toBe(`{"query_string":${JSON.stringify(sql)},"fields":{"id":"INTEGER","amount":"NUMERIC(10,2)","note":"TEXT"},"data":[[1,12.50,"a,b"],[2,null,""],[3,0.10,null]],"command":"SELECT","row_count":3}\n`);
    const csv = await result(alice.key, id, '', 'text/csv');
    expect(csv.type).toContain('text/csv');
    expect(csv.text).toBe('id,amount,note\r\n1,12.50,"a,b"\r\n2,,""\r\n3,0.10,\r\n');
    const page = await result(alice.key, id, '?offset=1&limit=1', 'application/x-ndjson');
    expect(page.text).toBe(`{"query_string":${JSON.stringify(sql)},"fields":{"id":"INTEGER","amount":"NUMERIC(10,2)","note":"TEXT"}}\n[2,null,""]\n{"command":"SELECT","row_count":3}\n`);
    const past = await result(alice.key, id, '?offset=3');
    expect(JSON.parse(past.text)).toMatchObject({ data: [], command: 'SELECT', row_count: 3 });
  });

  it('keeps the columns in order, names like "1" too', async () => {
    const { body } = await submit(alice.key, 'SELECT 1 AS b, 2 AS "1", 3 AS a');
    const done = await settled(alice.key, body.id as string);
    const text = await (await srv.call(alice.key, 'GET', `/queries/${done.id}`)).text();
    expect(text).toContain('"fields":{"b":"INTEGER","1":"INTEGER","a":"INTEGER"}');
  });

  it('with wait_ms answers as POST /query/ when it ends in time, and 202 when it does not', async () => {
    const quick = await srv.call(alice.key, 'POST', '/query/', { query_string: 'SELECT 7::numeric(4,1) AS x', async: true, wait_ms: 10_000 });
    expect(quick.status).toBe(200);
    expect(quick.headers.get('content-location')).toMatch(/^\/api\/v1beta\/queries\/[0-9a-f-]{36}$/);
    expect(await quick.text()).toBe('{"query_string":"SELECT 7::numeric(4,1) AS x","fields":{"x":"NUMERIC(4,1)"},"data":[[7.0]],"command":"SELECT","row_count":1}\n');

    const failing = await srv.call(alice.key, 'POST', '/query/', { query_string: 'SELECT 1/0', async: true, wait_ms: 10_000 });
    expect(failing.status).toBe(400);
    expect(await failing.json()).toMatchObject({ error: { code: '22012', message: 'division by zero' }, query_string: 'SELECT 1/0' });

    const slow = await srv.call(alice.key, 'POST', '/query/', { query_string: 'SELECT pg_sleep(3)', async: true, wait_ms: 200 });
    expect(slow.status).toBe(202);
    const id = ((await slow.json()) as { id: string }).id;
    expect((await info(alice.key, id)).status).toBe('running');
    expect((await settled(alice.key, id)).status).toBe('succeeded');

    const bad = await srv.call(alice.key, 'POST', '/query/', { query_string: 'SELECT 1', wait_ms: 10 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('22023');
    expect((await srv.call(alice.key, 'POST', '/query/', { query_string: 'SELECT 1', async: true, wait_ms: 50_001 })).status).toBe(400);
  });

  it('is judged by the policy when submitted: a denial answers at once, and the failure is in the history', async () => {
    const denied = await srv.call(bob.key, 'POST', '/query/', { query_string: `SELECT * FROM "${alice.name}/sales".t`, async: true });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: { code: string } }).error.code).toBe('42501');
    const list = (await (await srv.call(bob.key, 'GET', '/queries/')).json()) as { queries: Info[] };
    expect(list.queries[0]).toMatchObject({ status: 'failed', error: { code: '42501' }, query_string: `SELECT * FROM "${alice.name}/sales".t` });
  });

  it('reports a statement error as failed, with its position in the text sent', async () => {
    const { body } = await submit(alice.key, `SELECT nosuch FROM "${alice.name}/sales".t`);
    const done = await settled(alice.key, body.id as string);
    expect(done).toMatchObject({ status: 'failed', rows_stored: 0, result_expires_at: null, error: { code: '42703', message: 'column "nosuch" does not exist', position: 8 } });
    const res = await result(alice.key, done.id);
    expect(res.status).toBe(409);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: '55000' } });
  });

  it('runs a repo creation the control plane performs, and DDL and DML as statements', async () => {
    const created = await submit(alice.key, `CREATE SCHEMA "${alice.name}/later"`);
    expect(created.status).toBe(202);
    expect(await settled(alice.key, created.body.id as string)).toMatchObject({ status: 'succeeded', command: 'CREATE SCHEMA' });
    const table = await submit(alice.key, `CREATE TABLE "${alice.name}/later".x (v int)`);
    expect(await settled(alice.key, table.body.id as string)).toMatchObject({ status: 'succeeded', command: 'CREATE TABLE', fields: {} });
    const insert = await submit(alice.key, `INSERT INTO "${alice.name}/later".x SELECT generate_series(1, 5)`);
    const done = await settled(alice.key, insert.body.id as string);
    expect(done).toMatchObject({ status: 'succeeded', command: 'INSERT', row_count: 5 });
    expect(JSON.parse((await result(alice.key, done.id)).text)).toMatchObject({ fields: {}, data: [], command: 'INSERT', row_count: 5 });
  });
});

describe('a 1,000,000-row result', () => {
  const N = 1_000_000;
  const sql = `SELECT g AS id, (g * 1.5)::numeric(12,2) AS amount, 'row ' || g AS label,
                      CASE WHEN g % 7 = 0 THEN NULL ELSE g % 2 = 0 END AS even, 9007199254740993 + g AS big
                 FROM generate_series(1, ${N}) g`;
  let id: string;
  /** Row g (1-based) as each format writes it. */
  const amount = (g: number) => {
    const cents = g * 150;
    return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
  };
  const big = (g: number) => (9007199254740993n + BigInt(g)).toString();
  const jsonRow = (g: number) => `[${g},${amount(g)},"row ${g}",${g % 7 === 0 ? 'null' : String(g % 2 === 0)},${big(g)}]`;
  const csvRow = (g: number) => `${g},${amount(g)},row ${g},${g % 7 === 0 ? '' : g % 2 === 0 ? 't' : 'f'},${big(g)}\r\n`;

  beforeAll(async () => {
    const began = Date.now();
    const sent = await submit(alice.key, sql);
    id = sent.body.id as string;
    const done = await settled(alice.key, id, 240_000);
    expect(done).toMatchObject({ status: 'succeeded', row_count: N, rows_stored: N });
    const { rows } = await admin.query<{ pages: number; bytes: string }>('SELECT count(*)::int AS pages, sum(length(data)) AS bytes FROM _repobase.query_pages WHERE query_id = $1', [id]);
    console.log(`${N.toLocaleString('en')} rows stored in ${((Date.now() - began) / 1000).toFixed(1)} s: ${rows[0]!.pages} pages, ${(Number(rows[0]!.bytes) / 1e6).toFixed(1)} MB compressed`);
  }, 300_000);

  it('pages through it in JSON with exact values', async () => {
    const pageSize = 250_000;
    for (let offset = 0; offset < N; offset += pageSize) {
      const { status, text } = await result(alice.key, id, `?offset=${offset}&limit=${pageSize}`);
      expect(status).toBe(200);
      const head = `{"query_string":${JSON.stringify(sql)},"fields":{"id":"INTEGER","amount":"NUMERIC(12,2)","label":"TEXT","even":"BOOLEAN","big":"BIGINT"},"data":[`;
      expect(text.startsWith(head)).toBe(true);
      const rows: string[] = [];
      for (let g = offset + 1; g <= offset + pageSize; g++) rows.push(jsonRow(g));
      expect(text === `${head}${rows.join(',')}],"command":"SELECT","row_count":${N}}\n`).toBe(true);
    }
  }, 120_000);

  it('pages through it in NDJSON and CSV with exact values, in pages of any size', async () => {
    let g = 1;
    for (const [offset, limit] of [
      [0, 1],
      [1, 333_332],
      [333_333, 666_667],
    ] as const) {
      const { text } = await result(alice.key, id, `?offset=${offset}&limit=${limit}`, 'application/x-ndjson');
      const lines = text.split('\n');
      expect(lines[0]).toContain('"fields":{"id":"INTEGER"');
      expect(lines.length).toBe(limit + 3);
      for (let i = 1; i <= limit; i++, g++) if (lines[i] !== jsonRow(g)) expect(lines[i]).toBe(jsonRow(g));
      expect(lines[limit + 1]).toBe(`{"command":"SELECT","row_count":${N}}`);
    }
    expect(g).toBe(N + 1);
    const { text } = await result(alice.key, id, '', 'text/csv');
    const expected: string[] = ['id,amount,label,even,big\r\n'];
    for (let i = 1; i <= N; i++) expected.push(csvRow(i));
    expect(text === expected.join('')).toBe(true);
  }, 120_000);

  it('answers a page past the end empty', async () => {
    expect(JSON.parse((await result(alice.key, id, `?offset=${N}&limit=10`)).text)).toMatchObject({ data: [], row_count: N });
    expect((await result(alice.key, id, `?offset=${N + 5}`, 'text/csv')).text).toBe('id,amount,label,even,big\r\n');
  });
});

describe('cancel', () => {
  it('stops a running query in Postgres: no statement is left', async () => {
    const { body } = await submit(alice.key, 'SELECT pg_sleep(60) AS slept');
    const id = body.id as string;
    await expect.poll(async () => (await activeStatements(alice.name)).some((q) => q.includes('pg_sleep(60)')), { timeout: 10_000 }).toBe(true);
    const res = await srv.call(alice.key, 'DELETE', `/queries/${id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id, status: 'cancelled', error: { code: '57014' } });
    expect((await activeStatements(alice.name)).filter((q) => q.includes('pg_sleep(60)'))).toEqual([]);
    expect(await settled(alice.key, id)).toMatchObject({ status: 'cancelled' });
    expect((await result(alice.key, id)).status).toBe(409);
    // A second DELETE deletes it.
    expect((await srv.call(alice.key, 'DELETE', `/queries/${id}`)).status).toBe(204);
    expect((await srv.call(alice.key, 'GET', `/queries/${id}`)).status).toBe(404);
  });

  it('deletes a finished query and its result', async () => {
    const { body } = await submit(alice.key, 'SELECT generate_series(1, 10) AS n');
    const id = body.id as string;
    await settled(alice.key, id);
    expect((await srv.call(alice.key, 'DELETE', `/queries/${id}`)).status).toBe(204);
    expect((await result(alice.key, id)).status).toBe(404);
    const { rows } = await admin.query('SELECT 1 FROM _repobase.query_pages WHERE query_id = $1', [id]);
    expect(rows).toEqual([]);
  });
});

describe("another user's query", () => {
  it('answers 404 to its status, its result and its cancel, and goes on', async () => {
    const { body } = await submit(alice.key, 'SELECT pg_sleep(1.5), 1 AS one');
    const id = body.id as string;
    for (const [method, path] of [
      ['GET', `/queries/${id}`],
      ['GET', `/queries/${id}/result`],
      ['DELETE', `/queries/${id}`],
    ] as const) {
      const res = await srv.call(bob.key, method, path);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('42704');
    }
    expect((await srv.call(bob.key, 'GET', '/queries/not-an-id')).status).toBe(404);
    expect((await (await srv.call(bob.key, 'GET', '/queries/')).json()) as { queries: Info[] }).not.toMatchObject({ queries: expect.arrayContaining([expect.objectContaining({ id })]) });
    expect((await settled(alice.key, id)).status).toBe('succeeded');
  });
});

describe('the history', () => {
  it('lists sync and async queries, newest first, with status, timing, rows and error', async () => {
    const carol = await srv.user('carol');
    expect((await srv.query(carol.key, 'SELECT generate_series(1, 4) AS n')).status).toBe(200);
    expect((await srv.query(carol.key, 'SELECT 1/0')).status).toBe(400);
    const sent = await submit(carol.key, 'SELECT 2 AS two');
    await settled(carol.key, sent.body.id as string);
    const res = await srv.call(carol.key, 'GET', '/queries/');
    expect(res.status).toBe(200);
    const { queries } = (await res.json()) as { queries: Info[] };
    expect(queries.map((q) => [q.query_string, q.async, q.status, q.row_count, q.error?.code ?? null])).toEqual([
      ['SELECT 2 AS two', true, 'succeeded', 1, null],
      ['SELECT 1/0', false, 'failed', null, '22012'],
      ['SELECT generate_series(1, 4) AS n', false, 'succeeded', 4, null],
    ]);
    for (const q of queries) expect(Date.parse(q.finished_at!)).toBeGreaterThanOrEqual(Date.parse(q.submitted_at));
    // A sync query is found by its id too; its result was not kept.
    const sync = queries[2]!;
    expect(await info(carol.key, sync.id)).toMatchObject({ status: 'succeeded', command: 'SELECT', fields: null, result_expires_at: null });
    const kept = await result(carol.key, sync.id);
    expect(kept.status).toBe(409);
    expect(kept.text).toContain('ran without \\"async\\"');
    expect(((await (await srv.call(carol.key, 'GET', '/queries/?status=failed')).json()) as { queries: Info[] }).queries.map((q) => q.query_string)).toEqual(['SELECT 1/0']);
    expect(((await (await srv.call(carol.key, 'GET', '/queries/?limit=1')).json()) as { queries: Info[] }).queries).toHaveLength(1);
    expect((await srv.call(carol.key, 'GET', '/queries/?status=done')).status).toBe(400);
    // A sync query is deleted from the history by its id.
    expect((await srv.call(carol.key, 'DELETE', `/queries/${sync.id}`)).status).toBe(204);
    expect((await srv.call(carol.key, 'GET', `/queries/${sync.id}`)).status).toBe(404);
    expect((await srv.call(carol.key, 'DELETE', `/queries/${sync.id}`)).status).toBe(404);
    const left = ((await (await srv.call(carol.key, 'GET', '/queries/')).json()) as { queries: Info[] }).queries;
    expect(left.map((q) => q.query_string)).toEqual(['SELECT 2 AS two', 'SELECT 1/0']);
  });

  it('shows a scoped key only the queries run with it; the full key sees them all', async () => {
    const erin = await srv.user('erin');
    const made = await srv.call(erin.key, 'POST', '/keys/', { name: 'dashboard', access: 'read' });
    expect(made.status).toBe(201);
    const scoped = ((await made.json()) as { key: string }).key;
    expect((await srv.query(erin.key, 'SELECT 1 AS full_key')).status).toBe(200);
    expect((await srv.query(scoped, 'SELECT 1 AS scoped_key')).status).toBe(200);
    const listed = async (key: string) => ((await (await srv.call(key, 'GET', '/queries/')).json()) as { queries: Info[] }).queries;
    expect((await listed(scoped)).map((q) => q.query_string)).toEqual(['SELECT 1 AS scoped_key']);
    expect((await listed(erin.key)).map((q) => q.query_string)).toEqual(['SELECT 1 AS scoped_key', 'SELECT 1 AS full_key']);
    const fullOnes = (await listed(erin.key)).filter((q) => q.query_string === 'SELECT 1 AS full_key');
    expect((await srv.call(scoped, 'GET', `/queries/${fullOnes[0]!.id}`)).status).toBe(404);
  });

  it('is written in the background: a POST /query/ writes nothing of it, a listing writes what is held in one page', async () => {
    const dave = await srv.user('dave');
    await srv.query(dave.key, 'SELECT 1'); // key and rights cached
    const pages = async () =>
      (await srv.control.admin.query<{ n: number }>('SELECT count(*)::int AS n FROM _repobase.history_pages WHERE user_name = $1', [dave.name])).rows[0]!.n;
    const before = await pages();
    for (let i = 0; i < 20; i++) expect((await srv.query(dave.key, `SELECT ${i} AS i`)).status).toBe(200);
    // Nothing is written per request: at most the writer's one-second tick fell among them.
    const during = (await pages()) - before;
    expect(during).toBeLessThanOrEqual(1);
    // Listing writes what this process holds first: one page at most for the requests not yet written.
    const { queries } = (await (await srv.call(dave.key, 'GET', '/queries/')).json()) as { queries: Info[] };
    expect(queries).toHaveLength(21);
    const after = (await pages()) - before;
    expect(after).toBeGreaterThanOrEqual(1);
    expect(after).toBeLessThanOrEqual(during + 1);
  });
});
