/**
 * Faults of single upstream backends, made for real: a pooled backend killed while idle or in the
 * middle of a statement (`pg_terminate_backend`), a client that vanishes with session state
 * behind it, a user whose sessions are all busy. Each test checks what the affected client sees
 * and that the service goes on without a restart: a healthy client on another connection keeps
 * working.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendOf } from '../helpers/backend-of.js';
import { startTestService, type TestService } from '../helpers/service.js';

const SESSIONS_PER_USER = 3;
/** How long a client waits for a backend before 53300. */
const POOL_TIMEOUT_MS = 2_000;
let svc: TestService;
let admin: pg.Client;
let healthy: pg.Client;
let watcher: { name: string; key: string };

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: SESSIONS_PER_USER, pgStartupTimeoutMs: 1500, pgPoolTimeoutMs: POOL_TIMEOUT_MS });
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
  watcher = await svc.user('watcher');
  healthy = new pg.Client(svc.pgOptions(watcher.name, watcher.key));
  await healthy.connect();
});

afterAll(async () => {
  await healthy?.end().catch(() => undefined);
  await admin?.end();
  await svc?.stop();
});

/** The healthy client on its own connection still gets answers. */
async function stillServing(): Promise<void> {
  expect((await healthy.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
  expect(await rest(watcher.key, 'SELECT 2 AS ok')).toMatchObject({ status: 200, body: { data: [[2]] } });
}

interface RestAnswer {
  status: number;
  body: { data?: unknown[][]; error?: { code: string; message: string } };
}

async function rest(key: string, sql: string): Promise<RestAnswer> {
  const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query_string: sql }),
  });
  return { status: res.status, body: (await res.json()) as RestAnswer['body'] };
}

/** Backends of `role`, with their state and last statement. */
async function backends(role: string): Promise<{ pid: number; state: string; query: string }[]> {
  const { rows } = await admin.query<{ pid: number; state: string; query: string }>('SELECT pid, state, query FROM pg_stat_activity WHERE usename = $1 ORDER BY pid', [role]);
  return rows;
}

/**
 * Terminates `pids` and waits until Postgres no longer lists them — not until their processes
 * have exited: the pool must drop a parked session as soon as its backend's FATAL arrives, which
 * is before Postgres forgets the backend, so the next client is never handed a dead one.
 */
async function kill(pids: number[]): Promise<void> {
  expect(pids.length).toBeGreaterThan(0);
  for (const pid of pids) expect((await admin.query('SELECT pg_terminate_backend($1) AS ok', [pid])).rows[0].ok).toBe(true);
  await expect.poll(async () => (await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1)', [pids])).rows[0].n, { timeout: 5_000, interval: 20 }).toBe(0);
}

async function connect(user: { name: string; key: string }): Promise<pg.Client> {
  const c = new pg.Client(svc.pgOptions(user.name, user.key));
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

function pidOf(c: pg.Client): Promise<number> {
  return backendOf(c, admin);
}

describe('an idle pooled backend is killed', () => {
  it('over the wire: the next client gets a new backend, without an error', async () => {
    const alice = await svc.user('idlekill');
    const first = await connect(alice);
    const old = await pidOf(first);
    await first.end();
    // Back in the pool, reset and idle.
    await expect.poll(async () => (await backends(alice.name)).filter((b) => b.state === 'idle').map((b) => b.pid), { timeout: 5_000, interval: 20 }).toContain(old);
    await kill((await backends(alice.name)).map((b) => b.pid));
    const next = await connect(alice);
    try {
      const pid = await pidOf(next);
      expect(pid).not.toBe(old);
      expect((await next.query('SELECT current_user AS u')).rows).toEqual([{ u: alice.name }]);
    } finally {
      await next.end();
    }
    await stillServing();
  });

  it('over REST: the next query runs on a new backend, without an error', async () => {
    const bob = await svc.user('idlekillrest');
    const first = await rest(bob.key, 'SELECT pg_backend_pid() AS pid');
    expect(first.status).toBe(200);
    const old = first.body.data![0]![0] as number;
    await expect.poll(async () => (await backends(bob.name)).find((b) => b.pid === old)?.state, { timeout: 5_000, interval: 20 }).toBe('idle');
    await kill([old]);
    const next = await rest(bob.key, 'SELECT pg_backend_pid() AS pid');
    expect(next.body.error).toBeUndefined();
    expect(next.status).toBe(200);
    expect(next.body.data![0]![0]).not.toBe(old);
    await stillServing();
  });
});

describe('a backend killed in the middle of work', () => {
  it('over the wire, mid-transaction: that client gets a FATAL 57P01, its transaction is gone, others go on', async () => {
    const carol = await svc.user('txkill');
    await svc.control.createRepo({ owner: carol.name, repo: 'data' });
    const table = `"${carol.name}/data".kept`;
    const setup = await connect(carol);
    await setup.query(`CREATE TABLE ${table} (v int)`);
    await setup.end();
    const victim = await connect(carol);
    const errors: string[] = [];
    victim.on('error', (e: Error & { code?: string }) => errors.push(`${e.code ?? ''} ${e.message}`));
    await victim.query('BEGIN');
    await victim.query(`INSERT INTO ${table} VALUES (1)`);
    const pid = await pidOf(victim);
    await kill([pid]);
    await expect.poll(() => errors, { timeout: 5_000, interval: 20 }).toContainEqual(expect.stringMatching(/^57P01 terminating connection due to administrator command/));
    await expect(victim.query('SELECT 1')).rejects.toThrow();
    const after = await connect(carol);
    try {
      expect((await after.query(`SELECT count(*)::int AS n FROM ${table}`)).rows).toEqual([{ n: 0 }]);
    } finally {
      await after.end();
    }
    await stillServing();
  });

  it('over REST, mid-statement: a 5xx with the SQLSTATE, and the next query works', async () => {
    const dave = await svc.user('restkill');
    const answer = rest(dave.key, 'SELECT pg_sleep(30)');
    await expect.poll(async () => (await backends(dave.name)).filter((b) => b.state === 'active').length, { timeout: 5_000, interval: 20 }).toBe(1);
    const pid = (await backends(dave.name)).find((b) => b.state === 'active')!.pid;
    await kill([pid]);
    const failed = await answer;
    expect(failed.status).toBe(503);
    expect(['57P01', '08006']).toContain(failed.body.error?.code);
    const next = await rest(dave.key, 'SELECT pg_backend_pid() AS pid');
    expect(next.status).toBe(200);
    expect(next.body.data![0]![0]).not.toBe(pid);
    await stillServing();
  });
});

/** The session state a client can leave behind, as seen from a session of the same user. */
async function leftovers(c: pg.Client, lockKey: number): Promise<Record<string, unknown>> {
  const { rows } = await c.query(
    `SELECT current_setting('work_mem') AS work_mem,
            (SELECT count(*)::int FROM pg_prepared_statements) AS prepared,
            (SELECT count(*)::int FROM pg_class WHERE relname = 'scratch' AND relpersistence = 't') AS temp_tables,
            (SELECT count(*)::int FROM pg_listening_channels()) AS listening`,
  );
  const tx = (await c.query<{ now: Date; stmt: Date }>('SELECT now() AS now, statement_timestamp() AS stmt')).rows[0]!;
  const locks = await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1", [lockKey]);
  return { ...rows[0], inTransaction: tx.now.getTime() !== tx.stmt.getTime(), advisoryLocks: locks.rows[0].n };
}

const CLEAN = { work_mem: '4MB', prepared: 0, temp_tables: 0, listening: 0, inTransaction: false, advisoryLocks: 0 };

/** Leaves state of every kind on the session of `c`, then destroys its socket. */
async function leaveMess(c: pg.Client, user: string, lockKey: number, inTransaction: boolean): Promise<void> {
  if (inTransaction) await c.query('BEGIN');
  await c.query("SET work_mem = '7MB'");
  await c.query('PREPARE leftover AS SELECT 1');
  await c.query('CREATE TEMP TABLE scratch (v int)');
  await c.query('SELECT pg_advisory_lock($1)', [lockKey]);
  await c.query(`LISTEN "${user}/ch"`);
  const held = await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1", [lockKey]);
  expect(held.rows[0].n).toBe(1);
  // Inside a transaction, LISTEN takes effect at commit.
  expect((await c.query('SELECT count(*)::int AS n FROM pg_listening_channels()')).rows[0].n).toBe(inTransaction ? 0 : 1);
  (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
}

describe('a client that vanishes leaves nothing behind', () => {
  it('mid-transaction: the next client of the same user and settings starts from a clean session', async () => {
    const erin = await svc.user('messtx');
    const messy = await connect(erin);
    const old = await pidOf(messy);
    await leaveMess(messy, erin.name, 4242, true);
    const next = await connect(erin);
    try {
      // The session was in a transaction: it is closed rather than reused.
      await expect.poll(async () => (await backends(erin.name)).some((b) => b.pid === old), { timeout: 5_000, interval: 20 }).toBe(false);
      expect(await pidOf(next)).not.toBe(old);
      expect(await leftovers(next, 4242)).toEqual(CLEAN);
    } finally {
      await next.end();
    }
    await stillServing();
  });

  it('outside a transaction: the same backend is reused, reset', async () => {
    const fay = await svc.user('messidle');
    const messy = await connect(fay);
    const old = await pidOf(messy);
    await leaveMess(messy, fay.name, 4343, false);
    await expect.poll(async () => (await backends(fay.name)).find((b) => b.pid === old), { timeout: 5_000, interval: 20 }).toMatchObject({ state: 'idle', query: 'DISCARD ALL' });
    const next = await connect(fay);
    try {
      expect(await pidOf(next)).toBe(old);
      expect(await leftovers(next, 4343)).toEqual(CLEAN);
    } finally {
      await next.end();
    }
    await stillServing();
  });
});

describe('a user whose sessions are all busy', () => {
  /** Clients of `who` holding every session the user may have, each in a transaction. */
  async function holdAll(who: { name: string; key: string }): Promise<pg.Client[]> {
    const holders: pg.Client[] = [];
    for (let i = 0; i < SESSIONS_PER_USER; i++) {
      const h = await connect(who);
      await h.query('BEGIN');
      await h.query('SELECT 1');
      holders.push(h);
    }
    return holders;
  }

  it('clients waiting in line each get 53300 their own pgPoolTimeoutMs after they began to wait', async () => {
    const ida = await svc.user('line');
    const holders = await holdAll(ida);
    const [w1, w2] = [await connect(ida), await connect(ida)];
    const start = Date.now();
    const refusedAt = (c: pg.Client) =>
      c.query('SELECT 1').then(
        () => ({ code: 'none', after: Date.now() - start }),
        (e: { code?: string }) => ({ code: e.code, after: Date.now() - start }),
      );
    const first = refusedAt(w1);
    await new Promise((r) => setTimeout(r, 500));
    const second = refusedAt(w2);
    const [a, b] = await Promise.all([first, second]);
    expect(a.code).toBe('53300');
    expect(b.code).toBe('53300');
    expect(a.after).toBeGreaterThanOrEqual(POOL_TIMEOUT_MS);
    expect(b.after).toBeGreaterThanOrEqual(POOL_TIMEOUT_MS + 500); // not with the first: its own wait
    await stillServing();
    for (const c of [...holders, w1, w2]) await c.end().catch(() => undefined);
  });

  it('the next client waits, then gets 53300; other users are unaffected; room again once a holder leaves', async () => {
    const gus = await svc.user('busy');
    const holders = await holdAll(gus);
    const fourth = await connect(gus); // idle clients hold no session: the login succeeds
    const start = Date.now();
    const refused = await fourth.query('SELECT 1').then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(Date.now() - start).toBeGreaterThanOrEqual(POOL_TIMEOUT_MS);
    expect(refused?.code).toBe('53300');
    expect(refused?.message).toMatch(/too many connections for user/);
    await stillServing();
    await holders[0]!.query('COMMIT');
    await holders[0]!.end();
    const fifth = await connect(gus);
    try {
      expect((await fifth.query('SELECT 3 AS n')).rows).toEqual([{ n: 3 }]);
    } finally {
      await fifth.end();
      for (const h of holders.slice(1)) await h.end();
      await fourth.end().catch(() => undefined);
    }
  });
});
