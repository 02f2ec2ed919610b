/**
 * Per-user limits on a running service, each refused with its SQLSTATE on both front ends:
 * connections (53300), transactions running at once (53300 once the wait is over), the statement
 * timeout (57014, also when a wire client SETs its own off), the idle-in-transaction timeout
 * (25P03, likewise), the storage quota (53100 on what adds data; reading and deleting go on).
 * Limits set on one instance, or by the admin CLI, hold on another instance within a moment;
 * a user with nothing running gets in at once while another user takes every slot, and one who
 * comes back finds a backend though another keeps the rest idle in open transactions.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane } from '../../src/control/control-plane.js';
import { createLogger } from '../../src/shared/logger.js';
import { openCluster } from '../../src/upstream/cluster.js';
import { runCli } from '../helpers/cli.js';
import { startTestService, startTestServiceWith, type TestService } from '../helpers/service.js';
import { wireClient } from '../helpers/wire-client.js';

let svc: TestService;
const clients: pg.Client[] = [];

beforeAll(async () => {
  svc = await startTestService({ upstreamActiveMax: 2, pgPoolTimeoutMs: 1_500, storageRefreshMs: 300 });
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc?.stop();
});

async function connect(who: { name: string; key: string }): Promise<pg.Client> {
  const c = await wireClient(svc, who);
  clients.push(c);
  return c;
}

/** The SQLSTATE a promise fails with. */
async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err: unknown) {
    return (err as { code?: string }).code;
  }
}

async function rest(key: string, sql: string): Promise<{ status: number; code?: string; message?: string }> {
  const r = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query_string: sql }),
  });
  const body = (await r.json()) as { error?: { code: string; message: string } };
  return { status: r.status, code: body.error?.code, message: body.error?.message };
}

/** Retries `check` until it holds (limits reach the other processes through NOTIFY), for up to `ms`. */
async function eventually(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('not within the time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Cancels `user`'s statements until every one of `running` has ended (one let in after a cancel is cancelled too). */
async function cancelAll(user: string, running: Promise<unknown>[]): Promise<void> {
  let done = false;
  void Promise.all(running).then(() => (done = true));
  while (!done) {
    await svc.control.admin.query("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND state = 'active'", [user]);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A statement that keeps a core busy for several seconds (it runs: Postgres shows it using the CPU). */
const BUSY = 'SELECT count(*) FROM generate_series(1, 300000000)';

describe('limits per user', () => {
  it('connections: one past the limit is refused with 53300; another user connects', async () => {
    const u = await svc.user('conns');
    await svc.control.setLimits(u.name, { connections: 2 });
    await connect(u);
    await connect(u);
    const third = new pg.Client(svc.pgOptions(u.name, u.key));
    third.on('error', () => undefined);
    const err = await third.connect().catch((e: unknown) => e as { code: string; message: string });
    expect(err).toMatchObject({ code: '53300' });
    expect((err as { message: string }).message).toContain(`too many connections for user "${u.name}"`);
    const other = await svc.user('conns_other');
    expect((await (await connect(other)).query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
  });

  it('transactions at once: past the limit a transaction waits, then 53300 on the wire and 503 53300 over REST', async () => {
    const u = await svc.user('active');
    await svc.control.setLimits(u.name, { active: 1 });
    const busy = await connect(u);
    const running = busy.query(BUSY).catch((e: unknown) => e);
    await eventually(async () => (await svc.control.admin.query("SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND state = 'active'", [u.name])).rowCount === 1);
    const second = await connect(u);
    expect(await codeOf(second.query('SELECT 1'))).toBe('53300');
    expect(await rest(u.key, 'SELECT 1')).toMatchObject({ status: 503, code: '53300' });
    // Another user runs meanwhile.
    const other = await svc.user('active_other');
    expect((await rest(other.key, 'SELECT 2 AS n')).status).toBe(200);
    // The user sees the limit, the transaction open and the time waited; the operator the queue's totals.
    await svc.control.usage.flush();
    const usage = (await (await fetch(`${svc.httpUrl}/api/v1beta/usage/`, { headers: { authorization: `Bearer ${u.key}` } })).json()) as {
      limits: { active: number };
      now: { active_transactions: number; queued_ms: number };
      usage: { queued_ms: number }[];
    };
    expect(usage.limits.active).toBe(1);
    expect(usage.now.active_transactions).toBe(1);
    expect(usage.now.queued_ms).toBeGreaterThanOrEqual(2_500); // two waits of 1.5 s
    expect(usage.usage.reduce((sum, h) => sum + h.queued_ms, 0)).toBe(usage.now.queued_ms);
    const metrics = await (await fetch(svc.metricsUrl)).text();
    expect(Number(/^repobase_admission_wait_seconds_count (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);
    expect(metrics).toMatch(/^repobase_admission_transactions\{state="running"\} [1-9]/m);
    await cancelAll(u.name, [running]);
  });

  it('statement timeout: 57014 on the wire and 504 57014 over REST; a wire client that SETs it off is cancelled all the same', async () => {
    const u = await svc.user('slow');
    await svc.control.setLimits(u.name, { statementTimeoutMs: 500 });
    const c = await connect(u);
    expect(await codeOf(c.query('SELECT pg_sleep(3)'))).toBe('57014');
    expect(await rest(u.key, 'SELECT pg_sleep(3)')).toMatchObject({ status: 504, code: '57014' });
    await c.query('SET statement_timeout = 0');
    expect(await codeOf(c.query('SELECT pg_sleep(10)'))).toBe('57014');
    expect((await c.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
  });

  it('idle in transaction: the client is ended with 25P03, also when it SETs the timeout off', async () => {
    const u = await svc.user('idler');
    await svc.control.setLimits(u.name, { idleInTransactionTimeoutMs: 1_000 });
    /** The FATAL a client gets while it sends nothing comes as its error event. */
    const endedWith = (c: pg.Client) => new Promise<string | undefined>((resolve) => c.on('error', (e: Error & { code?: string }) => resolve(e.code)));
    const c = await connect(u);
    const ended = endedWith(c);
    await c.query('BEGIN');
    await c.query('SELECT 1');
    expect(await ended).toBe('25P03');
    const d = await connect(u);
    const dEnded = endedWith(d);
    await d.query('SET idle_in_transaction_session_timeout = 0'); // Postgres' own is off: the front end ends it
    await d.query('BEGIN');
    expect(await dEnded).toBe('25P03');
    // A client idle outside a transaction stays.
    const e = await connect(u);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await e.query('SELECT 3 AS n')).rows).toEqual([{ n: 3 }]);
  });

  it('storage quota: past it INSERT, UPDATE, COPY, CREATE and uploads fail with 53100 on both front ends; SELECT, DELETE and DROP go on', async () => {
    const u = await svc.user('hoard');
    const t = `"${u.name}/data".t`;
    await svc.control.createRepo({ owner: u.name, repo: 'data' });
    const c = await connect(u);
    await c.query(`CREATE TABLE ${t} (id int, pad text)`);
    await c.query(`INSERT INTO ${t} SELECT g, repeat('x', 100) FROM generate_series(1, 1000) g`);
    await svc.control.setLimits(u.name, { storageBytes: 64 * 1024 });
    // Each probe that got in before the new limit reached the policy added its row.
    let added = 0;
    await eventually(async () => {
      const code = await codeOf(c.query(`INSERT INTO ${t} VALUES (0, 'y')`));
      if (code === undefined) added++;
      return code === '53100';
    });
    const refused = await c.query(`UPDATE ${t} SET pad = 'z' WHERE id = 1`).catch((e: unknown) => e as { code: string; message: string; hint: string });
    expect(refused).toMatchObject({ code: '53100' });
    expect((refused as { message: string }).message).toMatch(/keeps \d.* KiB in their repos, and 64 KiB is allowed/);
    expect(await codeOf(c.query(`CREATE TABLE "${u.name}/data".more (id int)`))).toBe('53100');
    expect(await codeOf(c.query(`COPY ${t} FROM STDIN`))).toBe('53100');
    expect(await rest(u.key, `INSERT INTO ${t} VALUES (0, 'y')`)).toMatchObject({ status: 507, code: '53100' });
    const form = new FormData();
    form.set('file', new Blob(['a,b\n1,2\n']), 'more.csv');
    const upload = await fetch(`${svc.httpUrl}/api/v1beta/import/?repo=${encodeURIComponent(`${u.name}/data`)}`, { method: 'POST', headers: { authorization: `Bearer ${u.key}` }, body: form });
    expect(upload.status).toBe(507);
    expect(((await upload.json()) as { error: { code: string } }).error.code).toBe('53100');
    expect((await c.query(`SELECT count(*)::int AS n FROM ${t}`)).rows).toEqual([{ n: 1000 + added }]);
    expect((await rest(u.key, `SELECT count(*) FROM ${t}`)).status).toBe(200);
    expect((await c.query(`DELETE FROM ${t} WHERE id > 10`)).rowCount).toBe(990);
    await c.query(`DROP TABLE ${t}`);
    // Under the quota again once what it keeps is read again.
    await eventually(async () => (await codeOf(c.query(`CREATE TABLE ${t} (id int)`))) === undefined);
    expect((await rest(u.key, `INSERT INTO ${t} VALUES (1)`)).status).toBe(200);
  });

  it('a user with nothing running gets in at once while another holds every slot', async () => {
    const noisy = await svc.user('noisy');
    const quiet = await svc.user('quiet');
    const busy = await Promise.all([0, 1, 2].map(() => connect(noisy)));
    const running = busy.map((c) => c.query(BUSY).catch((e: unknown) => e));
    await eventually(async () => (await svc.control.admin.query("SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND state = 'active'", [noisy.name])).rowCount === 2);
    // noisy's third waits for its turn (2 slots); quiet's statements go in past it, on both front ends.
    const q = await connect(quiet);
    expect((await q.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    expect((await rest(quiet.key, 'SELECT 1')).status).toBe(200);
    const still = await svc.control.admin.query("SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND state = 'active'", [noisy.name]);
    expect(still.rowCount).toBe(2); // quiet was served while noisy's ran
    await cancelAll(noisy.name, running);
  });
});

describe('backends held idle in open transactions', () => {
  it("cannot be all of the service's: a user who comes back gets one at once, with no 53300", async () => {
    const small = await startTestService({ upstreamMaxSessions: 10, pgPoolTimeoutMs: 1_500 }); // the last one kept for users below their share
    const parked: pg.Client[] = [];
    try {
      const noisy = await small.user('parker');
      const quiet = await small.user('returner');
      // noisy opens transactions and leaves them idle: each keeps its backend.
      const outcomes = await Promise.all(
        Array.from({ length: 11 }, async () => {
          const c = await wireClient(small, noisy);
          parked.push(c);
          return codeOf(c.query('BEGIN').then(() => c.query('SELECT 1')));
        }),
      );
      expect(outcomes.filter((o) => o === undefined).length).toBe(9); // the reserve is not noisy's
      expect(outcomes.filter((o) => o === '53300').length).toBe(2);
      const held = await small.control.admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state LIKE 'idle in transaction%'", [noisy.name]);
      expect(held.rows[0].n).toBe(9);
      const q = await wireClient(small, quiet);
      parked.push(q);
      expect((await q.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    } finally {
      for (const c of parked) await c.end().catch(() => undefined);
      await small.stop();
    }
  });
});

describe('limits set elsewhere', () => {
  it('by the admin CLI: a running service holds them within a moment', async () => {
    const u = await svc.user('cli_set');
    const env = { REPOBASE_UPSTREAM_URL: svc.config.upstreamUrl, REPOBASE_DATA_DIR: svc.config.dataDir, REPOBASE_SECRET: svc.config.secret };
    const set = await runCli(['user', 'limits', u.name, '--statement-timeout', '300ms'], env);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/statement-timeout\s+\|?\s*300ms\s+\|?\s*set/);
    const c = await connect(u);
    await eventually(async () => (await codeOf(c.query('SELECT pg_sleep(1)'))) === '57014');
    const shown = await runCli(['user', 'show', u.name, '--json'], env);
    expect(JSON.parse(shown.stdout)).toMatchObject({ name: u.name, limits: { statement_timeout: { value: 300, set: true } } });
    const reset = await runCli(['user', 'limits', u.name, '--statement-timeout', 'default'], env);
    expect(reset.code, reset.stderr).toBe(0);
    await eventually(async () => (await codeOf(c.query('SELECT pg_sleep(0.5)'))) === undefined);
  });

  it('on another instance on the same cluster: it holds them within a moment', async () => {
    const other = await startTestServiceWith({ ...svc.config, httpPort: 0, pgPort: 0 });
    try {
      const u = await svc.user('two_instances');
      await other.control.setLimits(u.name, { connections: 1 });
      await connect(u);
      await eventually(async () => {
        const c = new pg.Client(svc.pgOptions(u.name, u.key));
        c.on('error', () => undefined);
        const code = await codeOf(c.connect());
        await c.end().catch(() => undefined);
        return code === '53300';
      });
    } finally {
      await other.stop();
    }
  });

  it('refuses bad values with the rule, and an unknown user', async () => {
    const env = { REPOBASE_UPSTREAM_URL: svc.config.upstreamUrl, REPOBASE_DATA_DIR: svc.config.dataDir, REPOBASE_SECRET: svc.config.secret };
    const u = await svc.user('bad_values');
    const bad = await runCli(['user', 'limits', u.name, '--storage', 'lots'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--storage: expected a size');
    const unknown = await runCli(['user', 'limits', 'nobody_here_x', '--active', '3'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('42704');
    const log = createLogger('warn');
    const cluster = await openCluster(svc.config, log);
    const control = await ControlPlane.open(cluster, log, { listen: false });
    try {
      await expect(control.setLimits(u.name, { active: -1 })).rejects.toMatchObject({ code: '22023' });
    } finally {
      await control.close();
      await cluster.close();
    }
  });
});
