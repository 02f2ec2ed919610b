/**
 * Faults of the upstream as a whole, made for real: Postgres down when the service starts (a
 * private cluster that is not running yet), and a network to Postgres that stops answering (a
 * TCP fault proxy that blackholes connections but keeps them open). Each test checks what the
 * clients see — a clear 08xxx error, never a hang — and that the service recovers by itself,
 * without a restart, once Postgres answers again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane } from '../../src/control/control-plane.js';
import { loadConfig } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { openCluster } from '../../src/upstream/cluster.js';
import { backendOf } from '../helpers/backend-of.js';
import { BIN } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/cluster.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { PrivateCluster, startServiceOn } from '../helpers/faults.js';
import { freePort } from '../helpers/ports.js';
import type { TestService } from '../helpers/service.js';

interface RestAnswer {
  status: number;
  body: { data?: unknown[][]; error?: { code: string; message: string; hint?: string } };
}

async function rest(svc: TestService, key: string, sql: string): Promise<RestAnswer> {
  const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query_string: sql }),
  });
  return { status: res.status, body: (await res.json()) as RestAnswer['body'] };
}

async function health(svc: TestService): Promise<number> {
  return (await fetch(`${svc.httpUrl}/healthz`)).status;
}

/** A new wire client's rows for `sql`, or its error as `code message`. */
async function wireOnce(svc: TestService, user: string, key: string, sql: string): Promise<unknown> {
  const c = new pg.Client({ ...svc.pgOptions(user, key), connectionTimeoutMillis: 20_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.query(sql)).rows;
  } catch (err: unknown) {
    const e = err as { code?: string; message: string };
    return `${e.code} ${e.message}`;
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('the upstream is down when the service starts', () => {
  let cluster: PrivateCluster;
  let svc: TestService | undefined;

  beforeAll(async () => {
    cluster = await PrivateCluster.create(false);
    await cluster.preparePassword();
  });

  afterAll(async () => {
    await svc?.stop();
    await cluster?.destroy();
  });

  it('starts anyway, answers 08006 on both front ends, and serves once Postgres is up, without a restart', async () => {
    svc = await startServiceOn(cluster.adminUrl());
    expect(await health(svc)).toBe(503);

    // A wire client: the clear 08006 (as a FATAL at log-in), not a driver's connection refused.
    const wire = await wireOnce(svc, 'nobody', 'rb_x', 'SELECT 1');
    expect(wire).toBe('08006 the database is not reachable; retrying');
    // A REST request with a well-formed key: 503 with the same error and a hint.
    const fakeKey = `rb_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    const answer = await rest(svc, fakeKey, 'SELECT 1');
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({ code: '08006', message: 'the database is not reachable; retrying' });
    expect(answer.body.error?.hint).toBeTruthy();
    await expect(svc.control.createUser('early')).rejects.toMatchObject({ code: '08006' });

    await cluster.start();
    const up = Date.now();
    await expect.poll(() => svc!.control.isReady, { timeout: 15_000, interval: 100 }).toBe(true);
    expect(Date.now() - up).toBeLessThan(10_000); // back-off capped at 2 s, then the migrations (9 of them; seconds on a loaded machine)
    await expect.poll(() => health(svc!), { timeout: 5_000, interval: 100 }).toBe(200);

    // Migrated by the service itself: users, wire and REST work.
    const user = await svc.user('late');
    expect(await wireOnce(svc, user.name, user.key, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    expect(await rest(svc, user.key, 'SELECT 2 AS two')).toMatchObject({ status: 200, body: { data: [[2]] } });
  }, 60_000);
});

describe('the upstream stops answering (blackholed connections)', () => {
  const CONNECT_TIMEOUT_MS = 1_000;
  const RESPONSE_TIMEOUT_MS = 1_500;
  const STATEMENT_TIMEOUT_MS = 1_000;
  let proxy: FaultProxy;
  let svc: TestService;
  let admin: pg.Client;
  let victim: { name: string; key: string };
  let other: { name: string; key: string };
  let otherWire: pg.Client;

  beforeAll(async () => {
    const url = await createTestDatabase();
    const u = new URL(url);
    proxy = await FaultProxy.start({ host: u.hostname, port: Number(u.port) });
    svc = await startServiceOn(proxy.url(url), {
      upstreamConnectTimeoutMs: CONNECT_TIMEOUT_MS,
      upstreamResponseTimeoutMs: RESPONSE_TIMEOUT_MS,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    });
    admin = new pg.Client({ connectionString: url }); // straight to Postgres, past the proxy
    await admin.connect();
    victim = await svc.user('victim');
    other = await svc.user('other');
    otherWire = new pg.Client(svc.pgOptions(other.name, other.key));
    otherWire.on('error', () => undefined);
    await otherWire.connect();
  });

  afterAll(async () => {
    await otherWire?.end().catch(() => undefined);
    await admin?.end();
    await svc?.stop();
    await proxy?.stop();
  });

  it('one session: its wire statement in flight ends with 08006 at the response timeout; other users go on', async () => {
    const c = new pg.Client(svc.pgOptions(victim.name, victim.key));
    const errors: string[] = [];
    c.on('error', (e: Error & { code?: string }) => errors.push(e.code ?? e.message));
    await c.connect();
    const pid = await backendOf(c, admin);
    const port = (await admin.query<{ port: number }>('SELECT client_port AS port FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]!.port;
    proxy.connection(port).blackhole();

    const sent = Date.now();
    const failure = await c.query('SELECT 2').then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    const took = Date.now() - sent;
    expect(failure).toMatchObject({ code: '08006', message: `the upstream connection did not answer within ${RESPONSE_TIMEOUT_MS} ms` });
    expect(took).toBeGreaterThanOrEqual(RESPONSE_TIMEOUT_MS - 100);
    expect(took).toBeLessThan(RESPONSE_TIMEOUT_MS + 5_000);
    await c.end().catch(() => undefined);

    expect((await otherWire.query('SELECT 3 AS ok')).rows).toEqual([{ ok: 3 }]);
    expect(await rest(svc, other.key, 'SELECT 4 AS ok')).toMatchObject({ status: 200, body: { data: [[4]] } });
    expect(await wireOnce(svc, victim.name, victim.key, 'SELECT 5 AS ok')).toEqual([{ ok: 5 }]); // a new session for the victim
  }, 30_000);

  it('one REST session: its statement ends a second past the statement timeout with 503 08006; the next request works', async () => {
    expect(await rest(svc, victim.key, 'SELECT 1 AS ok')).toMatchObject({ status: 200 }); // a pooled REST session now
    const { rows } = await admin.query<{ port: number }>("SELECT client_port AS port FROM pg_stat_activity WHERE usename = $1 AND application_name = 'repobase-rest'", [victim.name]);
    expect(rows).toHaveLength(1);
    proxy.connection(rows[0]!.port).blackhole();
    const sent = Date.now();
    const answer = await rest(svc, victim.key, 'SELECT 2 AS ok');
    const took = Date.now() - sent;
    expect(answer.status).toBe(503);
    expect(answer.body.error?.code).toBe('08006');
    expect(took).toBeGreaterThanOrEqual(STATEMENT_TIMEOUT_MS + 1_000 - 100);
    expect(took).toBeLessThan(STATEMENT_TIMEOUT_MS + 6_000);
    expect(await rest(svc, victim.key, 'SELECT 3 AS ok')).toMatchObject({ status: 200, body: { data: [[3]] } });
  }, 30_000);

  it('all of it: new connections time out, REST ends at its statement timeout, nothing hangs, memory stays flat; then it works again', async () => {
    // Warm what the log-in reads from the control plane (cached), and a pooled REST session.
    expect(await rest(svc, victim.key, 'SELECT 1 AS ok')).toMatchObject({ status: 200 });
    expect(await wireOnce(svc, victim.name, victim.key, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    const before = process.memoryUsage();

    proxy.blackhole();
    proxy.newConnections = 'hang';
    const started = Date.now();
    // REST: the pooled session does not answer; the request ends a second past the statement timeout.
    const restAnswers = await Promise.all(Array.from({ length: 10 }, () => rest(svc, victim.key, 'SELECT 1 AS ok')));
    for (const a of restAnswers) {
      expect(a.status).toBe(503);
      expect(a.body.error?.code).toBe('08006');
    }
    // Wire: the log-in is answered from the service; the first statement needs a new upstream
    // connection, which is accepted but never answers: the connect timeout ends it.
    const wireAnswers = await Promise.all(Array.from({ length: 10 }, () => wireOnce(svc, victim.name, victim.key, 'SELECT 1 AS ok')));
    for (const a of wireAnswers) expect(a).toMatch(/^08006 (upstream Postgres unavailable: no answer to the login within 1000 ms|the upstream connection did not answer within 1500 ms)$/);
    // The client in flight on an older session: its next statement gets the response timeout.
    await expect(otherWire.query('SELECT 6')).rejects.toMatchObject({ code: '08006' });
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(await health(svc)).toBe(503);
    const after = process.memoryUsage();
    expect(after.heapUsed - before.heapUsed).toBeLessThan(64 << 20);
    expect(after.rss - before.rss).toBeLessThan(128 << 20);

    proxy.newConnections = 'forward';
    proxy.restore();
    await expect.poll(() => wireOnce(svc, victim.name, victim.key, 'SELECT 7 AS ok'), { timeout: 10_000, interval: 200 }).toEqual([{ ok: 7 }]);
    await expect.poll(async () => (await rest(svc, victim.key, 'SELECT 8 AS ok')).body.data, { timeout: 10_000, interval: 200 }).toEqual([[8]]);
    await expect.poll(() => health(svc), { timeout: 10_000, interval: 200 }).toBe(200);
  }, 60_000);
});

describe('the upstream is down when `repobase serve --workers 2` starts', () => {
  let proxy: FaultProxy;
  let dataDir: string;
  let primary: ChildProcess | undefined;

  afterAll(async () => {
    if (primary?.exitCode === null) process.kill(-primary.pid!, 'SIGKILL');
    await proxy?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('the primary forks its workers anyway; each answers 08006, then serves once Postgres answers', async () => {
    // Postgres "down": a port that refuses every connection, until the proxy forwards again.
    const url = await createTestDatabase();
    const u = new URL(url);
    proxy = await FaultProxy.start({ host: u.hostname, port: Number(u.port) });
    proxy.newConnections = 'refuse';
    dataDir = await mkdtemp(join(tmpdir(), 'repobase-faults-workers-'));
    const env = {
      REPOBASE_UPSTREAM_URL: proxy.url(url),
      REPOBASE_DATA_DIR: dataDir,
      REPOBASE_SECRET: randomBytes(16).toString('hex'),
      REPOBASE_HTTP_PORT: String(await freePort()),
      REPOBASE_PG_PORT: String(await freePort()),
      REPOBASE_WORKERS: '2',
      REPOBASE_LOG_LEVEL: 'warn',
    };
    let output = '';
    primary = spawn(process.execPath, [BIN, 'serve'], { env: { PATH: process.env.PATH, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    primary.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    primary.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await expect.poll(() => output.includes('repobase is running (2 workers)') || primary!.exitCode !== null, { timeout: 30_000, interval: 100 }).toBe(true);
    expect(primary.exitCode, output).toBeNull();
    const httpUrl = `http://127.0.0.1:${env.REPOBASE_HTTP_PORT}`;
    expect((await fetch(`${httpUrl}/healthz`)).status).toBe(503);
    const client = () => new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user: 'nobody', password: 'rb_x', database: 'repobase' });
    for (let i = 0; i < 2; i++) {
      const c = client();
      c.on('error', () => undefined);
      await expect(c.connect()).rejects.toMatchObject({ code: '08006', message: 'the database is not reachable; retrying' });
    }

    proxy.newConnections = 'forward';
    await expect.poll(async () => (await fetch(`${httpUrl}/healthz`)).status, { timeout: 15_000, interval: 200 }).toBe(200);
    // The user is made here, past the proxy, as \`repobase user create\` would (without a process of its own).
    const user = `late_${randomBytes(3).toString('hex')}`;
    const config = loadConfig({}, { upstreamUrl: url, dataDir, secret: env.REPOBASE_SECRET, logLevel: 'warn' });
    const cluster = await openCluster(config, createLogger('warn'));
    let key: string;
    try {
      const control = await ControlPlane.open(cluster, createLogger('warn'), { listen: false });
      key = (await control.createUser(user)).key;
      await control.close();
    } finally {
      await cluster.close();
    }
    const selectOne = async () => {
      const c = new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user, password: key, database: 'repobase' });
      c.on('error', () => undefined);
      try {
        await c.connect();
        return (await c.query('SELECT 1 AS one')).rows;
      } catch (err: unknown) {
        return (err as Error).message;
      } finally {
        await c.end().catch(() => undefined);
      }
    };
    // Connections are handed to the workers in turn: these reach both.
    for (let i = 0; i < 4; i++) await expect.poll(selectOne, { timeout: 10_000, interval: 200 }).toEqual([{ one: 1 }]);
  }, 90_000);
});
