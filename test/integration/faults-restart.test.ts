/**
 * The upstream Postgres restarts (`pg_ctl stop -m fast`, then start) with statements in flight on
 * both front ends: those statements fail with the upstream's SQLSTATE, /healthz answers 503 while
 * Postgres is down, and within seconds of its return new wire and REST requests succeed, without
 * restarting the service; committed rows are still there. On a private cluster of this file's
 * own: the shared test cluster is never stopped.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrivateCluster, startServiceOn } from '../helpers/faults.js';

let cluster: PrivateCluster;
let svc: Awaited<ReturnType<typeof startServiceOn>>;

beforeAll(async () => {
  cluster = await PrivateCluster.create();
  svc = await startServiceOn(await cluster.createDatabase());
});

afterAll(async () => {
  await svc?.stop();
  await cluster?.destroy();
});

async function rest(key: string, sql: string): Promise<{ status: number; body: { data?: unknown[][]; error?: { code: string } } }> {
  const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query_string: sql }),
  });
  return { status: res.status, body: (await res.json()) as { data?: unknown[][]; error?: { code: string } } };
}

async function health(): Promise<number> {
  return (await fetch(`${svc.httpUrl}/healthz`)).status;
}

/** A new wire client's answer to `sql`, or its error's SQLSTATE. */
async function wireOnce(user: { name: string; key: string }, sql: string): Promise<unknown> {
  const c = new pg.Client(svc.pgOptions(user.name, user.key));
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.query(sql)).rows;
  } catch (err: unknown) {
    return `error ${(err as { code?: string }).code}`;
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('the upstream restarts', () => {
  it('in-flight statements fail with 57P01/08xxx, /healthz is 503 meanwhile, then everything works again', async () => {
    const user = await svc.user('restart');
    await svc.control.createRepo({ owner: user.name, repo: 'data' });
    const table = `"${user.name}/data".kept`;
    expect((await rest(user.key, `CREATE TABLE ${table} (v int)`)).status).toBe(200);
    expect((await rest(user.key, `INSERT INTO ${table} VALUES (42)`)).status).toBe(200);

    const wire = new pg.Client(svc.pgOptions(user.name, user.key));
    const wireErrors: string[] = [];
    wire.on('error', (e: Error & { code?: string }) => wireErrors.push(e.code ?? e.message));
    await wire.connect();
    const wireInFlight = wire.query('SELECT pg_sleep(30)').then(
      () => 'finished',
      (e: Error & { code?: string }) => e.code ?? e.message,
    );
    const restInFlight = rest(user.key, 'SELECT pg_sleep(30)').catch((err: unknown) => ({ status: 0, body: { error: { code: String(err) } } }));
    const admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
    admin.on('error', () => undefined);
    await admin.connect();
    try {
      const sleeping = async () => Number((await admin.query("SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND strpos(query, 'pg_sleep(30)') > 0", [user.name])).rows[0].n);
      await expect.poll(sleeping, { timeout: 5_000, interval: 20 }).toBe(2);
    } finally {
      await admin.end().catch(() => undefined);
    }

    await cluster.stop();
    expect(await wireInFlight).toMatch(/^(57P01|08\d\d\d)$/);
    const restFailed = await restInFlight;
    expect(restFailed.status).toBe(503);
    expect(restFailed.body.error?.code).toMatch(/^(57P01|08\d\d\d)$/);
    expect(await health()).toBe(503);
    expect(await wireOnce(user, 'SELECT 1 AS one')).toMatch(/^error (08\d\d\d|57P0\d)$/);
    expect((await rest(user.key, 'SELECT 1')).status).toBe(503);

    await cluster.start();
    const back = Date.now();
    await expect.poll(health, { timeout: 10_000, interval: 100 }).toBe(200);
    await expect.poll(() => wireOnce(user, `SELECT v FROM ${table}`), { timeout: 10_000, interval: 100 }).toEqual([{ v: 42 }]);
    await expect.poll(async () => (await rest(user.key, `SELECT v FROM ${table}`)).body.data, { timeout: 10_000, interval: 100 }).toEqual([[42]]);
    expect(Date.now() - back).toBeLessThan(5_000);
  });
});
