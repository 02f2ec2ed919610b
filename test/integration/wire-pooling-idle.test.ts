/**
 * Pooling by transaction, between a client's transactions: its backend waits in the pool, still
 * the client's until anything else needs it (see BackendLink.lend). Whatever takes it from there —
 * another client, the idle timeout, the service's budget for another user — the client's next
 * statement simply runs on another backend.
 */
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { backendOf } from '../helpers/backend-of.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { wireClient } from '../helpers/wire-client.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 2, upstreamIdleMs: 1_000, upstreamMaxSessions: 2, pgPoolGrowAfterMs: 50 });
});

afterAll(async () => {
  await svc?.stop();
});

const connect = (who: { name: string; key: string }): Promise<pg.Client> => wireClient(svc, who);

async function backends(user: string): Promise<number[]> {
  const { rows } = await svc.control.admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE usename = $1 ORDER BY pid', [user]);
  return rows.map((r) => r.pid);
}

it("a client's idle backend serves another client at once; the client's next statement runs on another", async () => {
  const u = await svc.user('lent');
  const [a, b] = [await connect(u), await connect(u)];
  await a.query("SET TIME ZONE 'Asia/Tokyo'");
  const first = await backendOf(a, svc.control.admin);
  await b.query('BEGIN');
  expect(await backendOf(b, svc.control.admin)).toBe(first); // the only idle one: a's
  // a's backend is b's now, in b's transaction: a gets the other, with its own settings.
  expect((await a.query('SHOW TIME ZONE')).rows).toEqual([{ TimeZone: 'Asia/Tokyo' }]);
  expect(await backendOf(a, svc.control.admin)).not.toBe(first);
  expect((await b.query('SHOW TIME ZONE')).rows).not.toEqual([{ TimeZone: 'Asia/Tokyo' }]);
  await b.query('COMMIT');
  await Promise.all([a.end(), b.end()]);
});

it("a client's idle backend closed by the idle timeout: its next statement opens another, with its settings", async () => {
  const u = await svc.user('swept');
  const a = await connect(u);
  await a.query("SET application_name = 'swept-client'");
  const [before] = await backends(u.name);
  expect(before).toBeDefined();
  await expect.poll(() => backends(u.name), { timeout: 5_000, interval: 100 }).toEqual([]);
  expect((await a.query('SHOW application_name')).rows).toEqual([{ application_name: 'swept-client' }]);
  const after = await backends(u.name);
  expect(after).toHaveLength(1);
  expect(after[0]).not.toBe(before);
  await a.end();
});

it("a client's idle backend closed for another user who waits for room in the service's budget: its next statement waits for room in turn", async () => {
  const [u, v] = [await svc.user('budgeta'), await svc.user('budgetb')];
  await expect.poll(() => backends(v.name), { timeout: 5_000, interval: 100 }).toEqual([]); // the greeting's, swept
  const a = await connect(u);
  await a.query('SELECT 1');
  expect(await backends(u.name)).toHaveLength(1);
  // v's two clients in transactions: the service's second backend, then a's idle one closed for v.
  const [v1, v2] = [await connect(v), await connect(v)];
  await v1.query('BEGIN');
  await v1.query('SELECT 1');
  await v2.query('BEGIN');
  expect((await v2.query('SELECT 2 AS n')).rows).toEqual([{ n: 2 }]);
  expect(await backends(u.name)).toEqual([]);
  const mine = a.query('SELECT 4 AS n');
  await v2.query('COMMIT');
  expect((await mine).rows).toEqual([{ n: 4 }]);
  await v1.query('COMMIT');
  await Promise.all([a.end(), v1.end(), v2.end()]);
});

it('a statement that waited for a backend while access to its repo was revoked is denied once a backend is free', async () => {
  const [owner, reader] = [await svc.user('waitowner'), await svc.user('waitreader')];
  await svc.control.createRepo({ owner: owner.name, repo: 'team' });
  const table = `"${owner.name}/team".t`;
  const o = await connect(owner);
  await o.query(`CREATE TABLE ${table} (id int); INSERT INTO ${table} VALUES (1)`);
  await o.end();
  await svc.control.setCollaborator({ owner: owner.name, repo: 'team' }, reader.name, 'read');
  await expect.poll(() => backends(owner.name), { timeout: 5_000, interval: 100 }).toEqual([]);
  const [r1, r2, r3] = [await connect(reader), await connect(reader), await connect(reader)];
  expect((await r3.query(`SELECT id FROM ${table}`)).rows).toEqual([{ id: 1 }]); // allowed, and decided once already
  for (const r of [r1, r2]) {
    await r.query('BEGIN');
    await r.query('SELECT 1');
  }
  // Both of the reader's backends are in transactions: r3's statement waits for one.
  let settled = false;
  const waiting = r3.query(`SELECT id FROM ${table}`).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 300));
  expect(settled).toBe(false);
  await svc.control.removeCollaborator({ owner: owner.name, repo: 'team' }, reader.name);
  await r1.query('COMMIT');
  // Denied by the proxy, decided again with the rights of now (Postgres' own denial, the second wall, has no hint).
  await expect(waiting).rejects.toMatchObject({ code: '42501', hint: expect.stringContaining('collaborator') });
  await r2.query('COMMIT');
  expect((await r3.query('SELECT 2 AS n')).rows).toEqual([{ n: 2 }]);
  await Promise.all([r1.end(), r2.end(), r3.end()]);
});
