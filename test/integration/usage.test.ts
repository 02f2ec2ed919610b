/**
 * Per-user usage against the real service: what a user runs over the wire (simple and extended
 * protocol, a cursor) and over REST is counted — statements, rows returned, bytes, upload bytes —
 * and each user reads only their own rows; `repobase usage` shows them to the operator.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageCounts } from '../../src/control/usage.js';
import { runCli } from '../helpers/cli.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { upload } from './ingest-helpers.js';

let srv: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };

beforeAll(async () => {
  srv = await startTestService();
  alice = await srv.user('alice');
  bob = await srv.user('bob');
  await srv.control.createRepo({ owner: alice.name, repo: 'data' });
  await srv.control.createRepo({ owner: bob.name, repo: 'data' });
});

afterAll(async () => {
  await srv?.stop();
});

/** `user`'s counts summed over every hour, once everything counted so far is written. */
async function totals(user: string): Promise<UsageCounts> {
  await srv.control.usage.flush();
  const sum: UsageCounts = { statements: 0, rowsReturned: 0, bytesIn: 0, bytesOut: 0, uploadBytes: 0, queuedMs: 0 };
  for (const r of await srv.control.usageRows({ user })) {
    for (const k of Object.keys(sum) as (keyof UsageCounts)[]) sum[k] += r[k];
  }
  return sum;
}

function minus(a: UsageCounts, b: UsageCounts): UsageCounts {
  return { statements: a.statements - b.statements, rowsReturned: a.rowsReturned - b.rowsReturned, bytesIn: a.bytesIn - b.bytesIn, bytesOut: a.bytesOut - b.bytesOut, uploadBytes: a.uploadBytes - b.uploadBytes, queuedMs: a.queuedMs - b.queuedMs };
}

function query(key: string, sql: string): Promise<Response> {
  return fetch(`${srv.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query_string: sql }),
  });
}

describe('usage', () => {
  it('wire: statements and rows returned from the command tags (simple, extended, a cursor), bytes both ways', async () => {
    const before = await totals(alice.name);
    const c = new pg.Client(srv.pgOptions(alice.name, alice.key));
    await c.connect();
    const t = `"${alice.name}/data".t`;
    try {
      await c.query(`CREATE TABLE ${t} (id int)`);
      await c.query(`INSERT INTO ${t} SELECT generate_series(1, 7)`); // INSERT 0 7: no rows returned
      expect((await c.query(`SELECT * FROM ${t}`)).rows).toHaveLength(7);
      expect((await c.query({ text: `SELECT * FROM ${t} WHERE id <= $1`, values: [3] })).rows).toHaveLength(3);
      expect((await c.query(`UPDATE ${t} SET id = id WHERE id > 5 RETURNING id`)).rows).toHaveLength(2);
      await c.query('BEGIN');
      await c.query(`DECLARE cur CURSOR FOR SELECT * FROM ${t}`);
      expect((await c.query('FETCH 4 FROM cur')).rows).toHaveLength(4);
      await c.query('COMMIT');
      await expect(c.query(`SELECT * FROM "${bob.name}/data".nope`)).rejects.toMatchObject({ code: '42501' }); // refused: not counted
    } finally {
      await c.end();
    }
    const d = minus(await totals(alice.name), before);
    expect(d.statements).toBe(9);
    expect(d.rowsReturned).toBe(7 + 3 + 2 + 4);
    expect(d.bytesIn).toBeGreaterThan(200);
    expect(d.bytesOut).toBeGreaterThan(200);
    expect(d.uploadBytes).toBe(0);
  });

  it('REST: the rows of the answer, request and answer bytes, upload bytes', async () => {
    const before = await totals(alice.name);
    const sql = `SELECT * FROM "${alice.name}/data".t`;
    const res = await query(alice.key, sql);
    expect(res.status).toBe(200);
    const body = await res.text();
    expect((JSON.parse(body) as { data: unknown[] }).data).toHaveLength(7);
    const csv = 'id,name\n1,a\n2,b\n3,c\n';
    const up = await upload(srv, alice.key, { repo: `${alice.name}/data`, table_name: 'up' }, { name: 'up.csv', data: csv });
    expect(up.body.error ?? null).toBeNull();
    expect(up.status).toBe(200);
    const d = minus(await totals(alice.name), before);
    expect(d.statements).toBe(1);
    expect(d.rowsReturned).toBe(7);
    expect(d.uploadBytes).toBe(Buffer.byteLength(csv));
    // The query's body and the upload's multipart body in; both answers with their headers out.
    expect(d.bytesIn).toBeGreaterThan(Buffer.byteLength(JSON.stringify({ query_string: sql })) + Buffer.byteLength(csv));
    expect(d.bytesOut).toBeGreaterThan(Buffer.byteLength(body));
  });

  it('GET /usage/ answers the caller\'s own rows only, from ?since=', async () => {
    expect((await query(bob.key, 'SELECT 1, 2')).status).toBe(200);
    await srv.control.usage.flush();
    const get = (key: string, qs = '') => fetch(`${srv.httpUrl}/api/v1beta/usage/${qs}`, { headers: { authorization: `Bearer ${key}` } });
    const mine = (await (await get(alice.key)).json()) as { usage: { hour: string; statements: number; rows_returned: number; upload_bytes: number }[] };
    const aliceTotals = await totals(alice.name);
    expect(mine.usage.reduce((n, r) => n + r.rows_returned, 0)).toBe(aliceTotals.rowsReturned);
    expect(mine.usage.reduce((n, r) => n + r.statements, 0)).toBe(aliceTotals.statements);
    const bobs = (await (await get(bob.key)).json()) as { usage: { statements: number; rows_returned: number }[] };
    expect(bobs.usage.reduce((n, r) => n + r.statements, 0)).toBe(1);
    expect(bobs.usage.reduce((n, r) => n + r.rows_returned, 0)).toBe(1);
    // No way to name another user: the query string takes only `since` (anything else is ignored).
    const other = await get(bob.key, `?user=${alice.name}`);
    expect(other.status).toBe(200);
    expect(((await other.json()) as { usage: { statements: number }[] }).usage.reduce((n, r) => n + r.statements, 0)).toBe(1);
    const future = (await (await get(alice.key, `?since=${encodeURIComponent(new Date(Date.now() + 2 * 3600_000).toISOString())}`)).json()) as { usage: unknown[] };
    expect(future.usage).toEqual([]);
    const recent = (await (await get(alice.key, '?since=1h')).json()) as { usage: unknown[] };
    expect(recent.usage.length).toBeGreaterThan(0);
    const bad = await get(alice.key, '?since=soon');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('22007');
    expect((await fetch(`${srv.httpUrl}/api/v1beta/usage/`)).status).toBe(401);
    const openapi = (await (await fetch(`${srv.httpUrl}/api/openapi.json`)).json()) as { paths: Record<string, { get?: { parameters?: { name: string }[] } }> };
    expect(openapi.paths['/api/v1beta/usage/']?.get?.parameters?.map((p) => p.name)).toEqual(['since']);
  });

  it('counts of several writers add up (as several instances or workers would)', async () => {
    const before = await totals(bob.name);
    srv.control.usage.add(bob.name, { statements: 5, rowsReturned: 50 });
    const flushing = srv.control.usage.flush();
    srv.control.usage.add(bob.name, { statements: 2, rowsReturned: 20 });
    await flushing;
    const d = minus(await totals(bob.name), before);
    expect(d).toMatchObject({ statements: 7, rowsReturned: 70 });
  });

  it('repobase usage: one user, from a time, as JSON lines', async () => {
    const env = { REPOBASE_UPSTREAM_URL: srv.config.upstreamUrl, REPOBASE_DATA_DIR: srv.config.dataDir, REPOBASE_SECRET: srv.config.secret };
    const json = await runCli(['usage', alice.name, '--since', '2h', '--json'], env);
    expect(json.code).toBe(0);
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { user: string; rows_returned: number });
    expect(new Set(lines.map((l) => l.user))).toEqual(new Set([alice.name]));
    expect(lines.reduce((n, l) => n + l.rows_returned, 0)).toBe((await totals(alice.name)).rowsReturned);
  });
});
