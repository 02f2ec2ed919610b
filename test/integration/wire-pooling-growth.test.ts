/**
 * Pooling by transaction: the pool follows the load, not the number of clients. A client that
 * finds none of its user's backends free waits for one to come back, and another is opened only
 * for a client once it has waited `pgPoolGrowAfterMs`, side by side for clients that all waited,
 * or once the line has had somebody in it that long without a break.
 * A client that finds its own backend serving another takes an idle one, and one more is opened
 * behind its back, so that clients running side by side stop moving between backends.
 */
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { backendOf } from '../helpers/backend-of.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { wireClient } from '../helpers/wire-client.js';

const GROW_AFTER_MS = 400;
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 20, pgPoolGrowAfterMs: GROW_AFTER_MS });
});

afterAll(async () => {
  await svc?.stop();
});

const connect = (who: { name: string; key: string }): Promise<pg.Client> => wireClient(svc, who);

/** Two clients of `who`: `holder` keeps the user's one backend in an open transaction. */
async function oneHeld(who: { name: string; key: string }): Promise<{ holder: pg.Client; other: pg.Client }> {
  const [holder, other] = [await connect(who), await connect(who)];
  await holder.query('BEGIN');
  await holder.query('SELECT 1');
  return { holder, other };
}

async function backends(user: string): Promise<number> {
  const { rows } = await svc.control.admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1', [user]);
  return rows[0]!.n;
}

it('a burst of clients with short transactions is served by the backends that come back, not a backend each', async () => {
  const u = await svc.user('burst');
  const cs = await Promise.all(Array.from({ length: 12 }, () => connect(u)));
  await Promise.all(
    cs.map(async (c, i) => {
      await c.query('BEGIN');
      expect((await c.query('SELECT $1::int * 2 AS n', [i])).rows).toEqual([{ n: i * 2 }]);
      await c.query('COMMIT');
    }),
  );
  // Opened only for a client that waited 400 ms: a few at most (12 before).
  expect(await backends(u.name)).toBeLessThanOrEqual(3);
  await Promise.all(cs.map((c) => c.end()));
});

it('clients that run side by side end up on backends of their own, opened behind their backs, and stay there', async () => {
  const u = await svc.user('sidebyside');
  const cs = await Promise.all(Array.from({ length: 4 }, () => connect(u)));
  // Three backends (each opened for a client that waited): one fewer than the clients.
  await Promise.all(cs.slice(0, 3).map((c) => c.query('SELECT pg_sleep(0.6)')));
  expect(await backends(u.name)).toBe(3);
  const seen = cs.map(() => new Set<number>());
  // Each on its own, as pgbench's clients run: a client often finds its own backend serving another.
  await Promise.all(cs.map(async (c) => { for (let i = 0; i < 300; i++) await c.query('SELECT 1'); }));
  await Promise.all(
    cs.map(async (c, i) => {
      // The backend that ran it (-1: another client's statement ran there meanwhile).
      for (let n = 0; n < 20; n++) seen[i]!.add(await backendOf(c, svc.control.admin).catch(() => -1));
    }),
  );
  // A client whose backend served another took an idle one and had one more opened for it, one at a time, never waiting.
  expect(await backends(u.name)).toBeGreaterThanOrEqual(4);
  expect(seen.map((s) => s.size)).toEqual([1, 1, 1, 1]);
  await Promise.all(cs.map((c) => c.end()));
});

it('clients whose short transactions keep the line from ever emptying get more backends, one each pgPoolGrowAfterMs', async () => {
  const u = await svc.user('queued');
  const cs = await Promise.all(Array.from({ length: 6 }, () => connect(u)));
  // One backend for all: each client waits a transaction's time (well under 400 ms), but there is
  // always one waiting, and every transaction hands the backend from one client to the next.
  const until = Date.now() + 2_000;
  await Promise.all(cs.map(async (c) => { while (Date.now() < until) await c.query('SELECT 1'); }));
  // Without the line's own clock: 1 backend to the end.
  // (More than the clients is possible: one opened behind the back of a client whose own was taken, as below.)
  expect(await backends(u.name)).toBeGreaterThanOrEqual(3);
  await Promise.all(cs.map((c) => c.end()));
});

it('a client that waits for a backend held in a long transaction gets another one after pgPoolGrowAfterMs', async () => {
  const u = await svc.user('long');
  const { holder, other } = await oneHeld(u);
  expect(await backends(u.name)).toBe(1);
  const started = Date.now();
  expect((await other.query('SELECT 2 AS n')).rows).toEqual([{ n: 2 }]);
  expect(Date.now() - started).toBeGreaterThanOrEqual(GROW_AFTER_MS - 50);
  expect(await backends(u.name)).toBe(2);
  await holder.query('COMMIT');
  await Promise.all([holder.end(), other.end()]);
});

it('clients that all keep their backends busy get one each, side by side, once they have waited', async () => {
  const u = await svc.user('busy');
  const cs = await Promise.all(Array.from({ length: 10 }, () => connect(u)));
  const running = cs.map((c) => c.query('SELECT pg_sleep(1.5)'));
  const active = async () =>
    (await svc.control.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active'", [u.name])).rows[0]!.n;
  await expect.poll(active, { timeout: 5_000, interval: 20 }).toBe(10);
  await Promise.all(running);
  await Promise.all(cs.map((c) => c.end()));
});

it("a process too busy to look in time (its event loop lags) opens no backend until it catches up: clients wait for its CPU, not for backends", async () => {
  const u = await svc.user('lagging');
  const { holder, other } = await oneHeld(u);
  const started = Date.now();
  const answer = other.query('SELECT 3 AS n');
  await new Promise((r) => setTimeout(r, 100)); // it waits in line now; its look is due at 400 ms
  const busyUntil = Date.now() + 1_000;
  while (Date.now() < busyUntil); // the service's event loop (this process's) is held up: that look comes 700 ms late
  expect((await answer).rows).toEqual([{ n: 3 }]);
  // Not opened at the late look, only at the next one, on time (without the rule: at about 1,100 ms).
  expect(Date.now() - started).toBeGreaterThanOrEqual(1_100 + GROW_AFTER_MS - 50);
  expect(await backends(u.name)).toBe(2);
  await holder.query('COMMIT');
  await Promise.all([holder.end(), other.end()]);
});
