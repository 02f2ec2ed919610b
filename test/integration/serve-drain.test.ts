/**
 * `repobase serve` stopping gracefully on SIGTERM: new connections refused, `/healthz` 503,
 * idle wire clients ended at once with 57P01, a transaction allowed to finish within
 * `drainTimeoutMs` (then 57P01), one still open after it ended and rolled back, and a second
 * SIGTERM ending everything at once. With one process, and with a primary and two workers. A REST
 * request in flight finishes; an open event stream does not hold the stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/cluster.js';
import { freePort } from '../helpers/ports.js';

const DRAIN_MS = 3_000;
const ADMIN_SHUTDOWN = '57P01';

let upstreamUrl: string;
let secret: string;
let user: string;
let key: string;
const dataDirs: string[] = [];
const running: ChildProcess[] = [];

interface Served {
  child: ChildProcess;
  env: Record<string, string>;
  exited: Promise<number | null>;
  output: () => string;
}

async function serve(workers: number): Promise<Served> {
  const dataDir = await mkdtemp(join(tmpdir(), 'repobase-drain-'));
  dataDirs.push(dataDir);
  const env = {
    REPOBASE_UPSTREAM_URL: upstreamUrl,
    REPOBASE_DATA_DIR: dataDir,
    REPOBASE_SECRET: secret,
    REPOBASE_HTTP_PORT: String(await freePort()),
    REPOBASE_PG_PORT: String(await freePort()),
    REPOBASE_WORKERS: String(workers),
    REPOBASE_DRAIN_TIMEOUT_MS: String(DRAIN_MS),
    REPOBASE_LOG_LEVEL: 'info',
  };
  const child = spawn(process.execPath, [BIN, 'serve'], { env: { PATH: process.env.PATH, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (const start = Date.now(); !out.includes('repobase is running'); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() - start > 30_000 || child.exitCode !== null) throw new Error(`serve did not start:\n${out}`);
  }
  return { child, env, exited, output: () => out };
}

/**
 * A connected client, and the errors it receives outside a query: a FATAL while idle, then pg's
 * own "connection terminated".
 */
async function connect(s: Served): Promise<{ client: pg.Client; errors: { code?: string }[] }> {
  const client = new pg.Client({ host: '127.0.0.1', port: Number(s.env.REPOBASE_PG_PORT), user, password: key, database: 'repobase' });
  const errors: { code?: string }[] = [];
  client.on('error', (err: Error & { code?: string }) => errors.push(err));
  await client.connect();
  return { client, errors };
}

async function rows(table: string): Promise<number[]> {
  const admin = new pg.Client({ connectionString: upstreamUrl });
  await admin.connect();
  try {
    return (await admin.query<{ a: number }>(`SELECT a FROM "${user}/drain".${table} ORDER BY a`)).rows.map((r) => r.a);
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  upstreamUrl = await createTestDatabase();
  secret = randomBytes(16).toString('hex');
  user = `drain_${randomBytes(3).toString('hex')}`;
  const env = { REPOBASE_UPSTREAM_URL: upstreamUrl, REPOBASE_SECRET: secret, REPOBASE_DATA_DIR: await mkdtemp(join(tmpdir(), 'repobase-drain-')) };
  dataDirs.push(env.REPOBASE_DATA_DIR);
  const created = await runCli(['user', 'create', user], env);
  expect(created.code, created.stderr).toBe(0);
  key = created.stdout.trim();
  // The repo through the REST API, its tables over the wire (one per scenario).
  const s = await serve(1);
  const res = await fetch(`http://127.0.0.1:${s.env.REPOBASE_HTTP_PORT}/api/v1beta/repos/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'drain' }),
  });
  expect(res.status).toBe(201);
  const { client } = await connect(s);
  for (const t of ['t1', 't2']) await client.query(`CREATE TABLE "${user}/drain".${t} (a int)`);
  await client.end();
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}, 60_000);

afterAll(async () => {
  for (const c of running) if (c.exitCode === null && c.pid) process.kill(-c.pid, 'SIGKILL');
  for (const d of dataDirs) await rm(d, { recursive: true, force: true });
});

describe('repobase serve on SIGTERM, over HTTP', () => {
  it('lets a REST request in flight finish; an open event stream does not hold the stop', async () => {
    const s = await serve(1);
    const http = `http://127.0.0.1:${s.env.REPOBASE_HTTP_PORT}`;
    const auth = { authorization: `Bearer ${key}` };
    const events = await fetch(`${http}/api/v1beta/events`, { headers: auth });
    expect(events.status).toBe(200);
    const running = fetch(`${http}/api/v1beta/query/`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query_string: 'SELECT pg_sleep(1.5) IS NOT NULL AS slept' }),
    });
    await new Promise((r) => setTimeout(r, 500)); // the statement is running upstream
    const signalled = Date.now();
    process.kill(s.child.pid!, 'SIGTERM');
    const answer = await running;
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { data: unknown }).data).toEqual([[true]]);
    expect(await s.exited, s.output()).toBe(0);
    // Stopped once the request was answered, not at the end of the drain window the stream would hold.
    expect(Date.now() - signalled).toBeLessThan(DRAIN_MS);
    await events.body?.cancel().catch(() => undefined);
  }, 30_000);
});

describe.each([
  [1, 't1'],
  [2, 't2'],
])('repobase serve with %i worker(s), on SIGTERM', (workers, table) => {
  it('drains: idle clients end at once, a transaction may commit, one left open is rolled back', async () => {
    const s = await serve(workers);
    const http = `http://127.0.0.1:${s.env.REPOBASE_HTTP_PORT}`;
    expect((await fetch(`${http}/healthz`)).status).toBe(200);
    const idle = await connect(s);
    const committing = await connect(s);
    const stuck = await connect(s);
    await committing.client.query('BEGIN');
    await committing.client.query(`INSERT INTO "${user}/drain".${table} VALUES (1)`);
    await stuck.client.query('BEGIN');
    await stuck.client.query(`INSERT INTO "${user}/drain".${table} VALUES (2)`);

    const signalled = Date.now();
    process.kill(s.child.pid!, 'SIGTERM');

    // The idle client: 57P01 at once.
    await expect.poll(() => idle.errors[0]?.code, { timeout: 1_000, interval: 20 }).toBe(ADMIN_SHUTDOWN);
    // A load balancer's probe: 503 at once, and so for a new REST request.
    const health = await fetch(`${http}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: 'unavailable', reason: 'shutting down' });
    const late = await fetch(`${http}/api/v1beta/repos/`, { headers: { authorization: `Bearer ${key}` } });
    expect(late.status).toBe(503);
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe('57P03');
    // No new wire connection: refused (or closed, if one was already on its way).
    await expect(connect(s)).rejects.toThrow();
    expect(Date.now() - signalled).toBeLessThan(DRAIN_MS);

    // The transaction in progress commits within the window, then its client gets 57P01.
    expect(committing.errors).toEqual([]);
    await committing.client.query('COMMIT');
    await expect.poll(() => committing.errors[0]?.code, { timeout: 1_000, interval: 20 }).toBe(ADMIN_SHUTDOWN);
    expect(Date.now() - signalled).toBeLessThan(DRAIN_MS);

    // The one still open: 57P01 once the drain timeout passes, not before.
    expect(stuck.errors).toEqual([]);
    await expect.poll(() => stuck.errors[0]?.code, { timeout: DRAIN_MS + 2_000, interval: 50 }).toBe(ADMIN_SHUTDOWN);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(DRAIN_MS - 100);

    expect(await s.exited, s.output()).toBe(0);
    expect(await rows(table)).toEqual([1]); // 2 was rolled back
    for (const c of [idle, committing, stuck]) await c.client.end().catch(() => undefined);
  }, 30_000);

  it('stops at once on a second SIGTERM', async () => {
    const s = await serve(workers);
    const stuck = await connect(s);
    await stuck.client.query('BEGIN');
    process.kill(s.child.pid!, 'SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    expect(s.child.exitCode).toBeNull(); // still draining: the transaction is open
    const second = Date.now();
    process.kill(s.child.pid!, 'SIGTERM');
    await s.exited;
    expect(Date.now() - second).toBeLessThan(1_000);
    // Workers, if any, leave with their primary.
    await expect.poll(() => stuck.client.query('SELECT 1').then(() => 'answered', () => 'gone'), { timeout: 2_000, interval: 100 }).toBe('gone');
    await stuck.client.end().catch(() => undefined);
  }, 30_000);
});
