/**
 * The limits of async queries against a real Postgres: past `asyncMaxRunning` a user's queries
 * wait queued and start as slots free (one user's line holds nobody else up); past
 * `asyncResultMaxBytes` the oldest finished results are deleted first, and a result that does not
 * fit even so fails with 53400; a result is deleted `asyncResultTtlMs` after its query ended (the
 * record stays in the history); the history keeps `queryHistoryDays`.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteOldEntries } from '../../src/control/history-pages.js';
import { deleteOldQueries } from '../../src/control/query-records.js';
import { startRest, type RestServer } from '../helpers/rest.js';

interface Info {
  id: string;
  status: string;
  rows_stored: number;
  result_expires_at: string | null;
  error: { code: string; message: string; hint: string | null } | null;
}

let admin: pg.Client;

async function submit(srv: RestServer, key: string, sql: string): Promise<string> {
  const res = await srv.call(key, 'POST', '/query/', { query_string: sql, async: true });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function info(srv: RestServer, key: string, id: string): Promise<Info> {
  const res = await srv.call(key, 'GET', `/queries/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Info;
}

async function settled(srv: RestServer, key: string, id: string): Promise<Info> {
  await expect.poll(async () => (await info(srv, key, id)).status, { timeout: 60_000, interval: 100 }).not.toMatch(/^(queued|running)$/);
  return info(srv, key, id);
}

/** Compressed bytes of one user's stored results. */
async function storedBytes(user: string): Promise<number> {
  const { rows } = await admin.query<{ n: string | null }>('SELECT sum(result_bytes) AS n FROM _repobase.queries WHERE user_name = $1', [user]);
  return Number(rows[0]!.n ?? 0);
}

/** Rows of random text: about 34 compressed bytes each (random hex does not compress below half). */
const randomRows = (n: number) => `SELECT g, md5(g::text || random()::text) AS a, md5(random()::text) AS b FROM generate_series(1, ${n}) g`;

describe('asyncMaxRunning', () => {
  let srv: RestServer;
  beforeAll(async () => {
    srv = await startRest({ config: { asyncMaxRunning: 2 } });
    admin = new pg.Client({ connectionString: srv.config.upstreamUrl });
    await admin.connect();
  }, 60_000);
  afterAll(async () => {
    await admin?.end();
    await srv?.stop();
  });

  it('queues a user past the limit and starts the next as a slot frees; other users are not held up', async () => {
    const alice = await srv.user('alice');
    const bob = await srv.user('bob');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await submit(srv, alice.key, `SELECT ${i} AS i, pg_sleep(1.5)`));
    const states = await Promise.all(ids.map((id) => info(srv, alice.key, id)));
    expect(states.map((s) => s.status)).toEqual(['running', 'running', 'queued']);
    // Another user has slots of their own.
    const other = await submit(srv, bob.key, 'SELECT 1 AS one');
    expect((await settled(srv, bob.key, other)).status).toBe('succeeded');
    expect((await info(srv, alice.key, ids[2]!)).status).toBe('queued');
    const listed = (await (await srv.call(alice.key, 'GET', '/queries/?status=queued')).json()) as { queries: Info[] };
    expect(listed.queries.map((q) => q.id)).toEqual([ids[2]]);
    // The third starts when one of the first two ends, and succeeds.
    const done = await Promise.all(ids.map((id) => settled(srv, alice.key, id)));
    expect(done.map((s) => s.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    const { rows } = await admin.query<{ id: string; started_at: Date; finished_at: Date }>('SELECT id, started_at, finished_at FROM _repobase.queries WHERE id = ANY($1::uuid[])', [ids]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const firstEnd = Math.min(byId.get(ids[0]!)!.finished_at.getTime(), byId.get(ids[1]!)!.finished_at.getTime());
    expect(byId.get(ids[2]!)!.started_at.getTime()).toBeGreaterThanOrEqual(firstEnd - 5);
  }, 60_000);

  it('cancels a queued query before it starts', async () => {
    const carol = await srv.user('carol');
    const running = [await submit(srv, carol.key, 'SELECT pg_sleep(30)'), await submit(srv, carol.key, 'SELECT pg_sleep(30)')];
    const queued = await submit(srv, carol.key, 'SELECT 1');
    expect((await info(srv, carol.key, queued)).status).toBe('queued');
    const res = await srv.call(carol.key, 'DELETE', `/queries/${queued}`);
    expect(await res.json()).toMatchObject({ status: 'cancelled' });
    for (const id of running) expect((await srv.call(carol.key, 'DELETE', `/queries/${id}`)).status).toBe(200);
    expect((await info(srv, carol.key, queued)).status).toBe('cancelled');
  });
});

describe('asyncResultMaxBytes and asyncResultTtlMs', () => {
  const MAX = 200_000;
  let srv: RestServer;
  beforeAll(async () => {
    srv = await startRest({ config: { asyncResultMaxBytes: MAX, asyncResultTtlMs: 3_000 } });
    admin = new pg.Client({ connectionString: srv.config.upstreamUrl });
    await admin.connect();
  }, 60_000);
  afterAll(async () => {
    await admin?.end();
    await srv?.stop();
  });

  it('deletes the oldest results first to make room, and fails a result that cannot fit with 53400', async () => {
    const dana = await srv.user('dana');
    const first = await submit(srv, dana.key, randomRows(2_500));
    expect((await settled(srv, dana.key, first)).status).toBe('succeeded');
    const second = await submit(srv, dana.key, randomRows(2_500));
    expect((await settled(srv, dana.key, second)).status).toBe('succeeded');
    const both = await storedBytes(dana.name);
    expect(both).toBeGreaterThan(MAX / 2);
    expect(both).toBeLessThanOrEqual(MAX);
    // A third does not fit beside both: the oldest goes.
    const third = await submit(srv, dana.key, randomRows(2_500));
    expect((await settled(srv, dana.key, third)).status).toBe('succeeded');
    expect(await storedBytes(dana.name)).toBeLessThanOrEqual(MAX);
    const evicted = await srv.call(dana.key, 'GET', `/queries/${first}/result`);
    expect(evicted.status).toBe(409);
    expect(((await evicted.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: '55000', message: `the result of query ${first} is no longer stored` });
    expect((await info(srv, dana.key, first)).result_expires_at).toBeNull();
    expect((await srv.call(dana.key, 'GET', `/queries/${third}/result?limit=1`)).status).toBe(200);

    // One that alone is larger than the limit fails, and the results kept before stay.
    const before = await storedBytes(dana.name);
    const huge = await settled(srv, dana.key, await submit(srv, dana.key, randomRows(20_000)));
    expect(huge).toMatchObject({ status: 'failed', rows_stored: 0, error: { code: '53400' } });
    expect(huge.error!.hint).toContain('asyncResultMaxBytes');
    expect(await storedBytes(dana.name)).toBe(before);
    const { rows } = await admin.query('SELECT 1 FROM _repobase.query_pages WHERE query_id = $1', [huge.id]);
    expect(rows).toEqual([]);
  }, 60_000);

  it('deletes a result asyncResultTtlMs after its query ended; the query stays in the history', async () => {
    const erin = await srv.user('erin');
    const id = await submit(srv, erin.key, 'SELECT generate_series(1, 100) AS n');
    const done = await settled(srv, erin.key, id);
    expect(Date.parse(done.result_expires_at!) - Date.now()).toBeLessThanOrEqual(3_000);
    expect((await srv.call(erin.key, 'GET', `/queries/${id}/result`)).status).toBe(200);
    await expect.poll(async () => (await srv.call(erin.key, 'GET', `/queries/${id}/result`)).status, { timeout: 10_000, interval: 250 }).toBe(409);
    expect(await info(srv, erin.key, id)).toMatchObject({ status: 'succeeded', rows_stored: 100, result_expires_at: null });
    const { rows } = await admin.query('SELECT 1 FROM _repobase.query_pages WHERE query_id = $1', [id]);
    expect(rows).toEqual([]);
  }, 30_000);

  it('deletes queries older than queryHistoryDays, with their results', async () => {
    const fay = await srv.user('fay');
    expect((await srv.query(fay.key, 'SELECT 1')).status).toBe(200);
    const id = await submit(srv, fay.key, 'SELECT 2');
    await settled(srv, fay.key, id);
    const listed = (await (await srv.call(fay.key, 'GET', '/queries/')).json()) as { queries: Info[] };
    expect(listed.queries).toHaveLength(2);
    await admin.query("UPDATE _repobase.queries SET submitted_at = submitted_at - interval '8 days' WHERE user_name = $1", [fay.name]);
    await admin.query("UPDATE _repobase.history_pages SET first_at = first_at - interval '8 days', last_at = last_at - interval '8 days' WHERE user_name = $1", [fay.name]);
    expect(await deleteOldQueries(srv.control.admin, 7)).toBeGreaterThanOrEqual(1);
    expect(await deleteOldEntries(srv.control.admin, 7)).toBeGreaterThanOrEqual(1);
    expect(((await (await srv.call(fay.key, 'GET', '/queries/')).json()) as { queries: Info[] }).queries).toEqual([]);
  });
});
