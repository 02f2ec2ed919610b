/**
 * Async queries across instances on one cluster, as behind a load balancer: a ~10 s query sent to
 * instance A is polled to completion, and its result read, on instance B; a cancel sent to B stops
 * the statement A runs; and when the process running a query is killed (`repobase serve` in a
 * child process, SIGKILL), the next look at it from another instance marks it failed and cancels
 * its statement in Postgres.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import { BIN } from '../helpers/cli.js';
import { testConfig } from '../helpers/cluster.js';
import { freePort } from '../helpers/ports.js';
import { startTestServiceWith, type TestService } from '../helpers/service.js';

let base: Config;
let a: TestService;
let b: TestService;
let admin: pg.Client;
let user: { name: string; key: string };

interface Info {
  id: string;
  status: string;
  row_count: number | null;
  started_at: string | null;
  finished_at: string | null;
  error: { code: string; message: string } | null;
}

function call(on: { httpUrl: string }, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${on.httpUrl}/api/v1beta${path}`, {
    method,
    headers: { authorization: `Bearer ${user.key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function submit(on: { httpUrl: string }, sql: string): Promise<string> {
  const res = await call(on, 'POST', '/query/', { query_string: sql, async: true });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function info(on: { httpUrl: string }, id: string): Promise<Info> {
  const res = await call(on, 'GET', `/queries/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Info;
}

async function active(statement: string): Promise<number> {
  const { rows } = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND query LIKE '%' || $2", [user.name, statement]);
  return rows[0]!.n;
}

beforeAll(async () => {
  base = await testConfig();
  a = await startTestServiceWith(base);
  b = await startTestServiceWith(base);
  admin = new pg.Client({ connectionString: base.upstreamUrl });
  await admin.connect();
  user = await a.user('inst');
}, 60_000);

afterAll(async () => {
  await admin?.end();
  await a?.stop();
  await b?.stop();
});

describe('async queries on two instances', () => {
  it('polls a ~10 s query sent to A to completion from B, and reads its result there', async () => {
    const began = Date.now();
    const id = await submit(a, 'SELECT 42::numeric(5,1) AS answer, now() - statement_timestamp() < interval \'1 s\' AS fresh FROM pg_sleep(10)');
    let polls = 0;
    let last: Info;
    for (;;) {
      last = await info(b, id);
      polls++;
      if (last.status !== 'running' && last.status !== 'queued') break;
      expect(Date.now() - began).toBeLessThan(60_000);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(last).toMatchObject({ status: 'succeeded', row_count: 1, error: null });
    expect(Date.parse(last.finished_at!) - Date.parse(last.started_at!)).toBeGreaterThanOrEqual(9_900);
    expect(polls).toBeGreaterThan(5); // it was seen running from B
    const res = await call(b, 'GET', `/queries/${id}/result`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ fields: { answer: 'NUMERIC(5,1)', fresh: 'BOOLEAN' }, data: [[42, true]], command: 'SELECT', row_count: 1 });
    const list = (await (await call(b, 'GET', '/queries/')).json()) as { queries: Info[] };
    expect(list.queries.map((q) => q.id)).toContain(id);
  }, 90_000);

  it('cancels from B a statement running on A: Postgres shows none left', async () => {
    const statement = 'SELECT pg_sleep(60) AS across';
    const id = await submit(a, statement);
    await expect.poll(() => active(statement), { timeout: 10_000 }).toBe(1);
    const res = await call(b, 'DELETE', `/queries/${id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id, status: 'cancelled' });
    expect(await active(statement)).toBe(0);
    expect(await info(a, id)).toMatchObject({ status: 'cancelled', error: { code: '57014' } });
  }, 30_000);
});

describe('a query whose instance died', () => {
  let child: ChildProcess | undefined;
  let dataDir: string;

  afterAll(async () => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is marked failed by the next instance that looks at it, and its statement cancelled', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'repobase-async-died-'));
    const httpPort = await freePort();
    const env = {
      PATH: process.env.PATH,
      REPOBASE_UPSTREAM_URL: base.upstreamUrl,
      REPOBASE_SECRET: base.secret,
      REPOBASE_DATA_DIR: dataDir,
      REPOBASE_HTTP_PORT: String(httpPort),
      REPOBASE_PG_PORT: String(await freePort()),
      REPOBASE_WORKERS: '1',
      REPOBASE_LOG_LEVEL: 'warn',
    };
    let output = '';
    child = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const c = { httpUrl: `http://127.0.0.1:${httpPort}` };
    await expect.poll(async () => (await fetch(`${c.httpUrl}/healthz`).catch(() => undefined))?.status, { timeout: 30_000 }).toBe(200);

    const statement = 'SELECT pg_sleep(60) AS orphan';
    const id = await submit(c, statement);
    await expect.poll(() => active(statement), { timeout: 10_000 }).toBe(1);
    expect((await info(a, id)).status).toBe('running');
    const gone = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;

    // Its runner's lock went with its connection: the first look marks it failed.
    await expect.poll(async () => (await info(b, id)).status, { timeout: 10_000 }).toBe('failed');
    expect((await info(a, id)).error).toMatchObject({ code: '57P01', message: expect.stringContaining('the server running it stopped') });
    await expect.poll(() => active(statement), { timeout: 10_000 }).toBe(0);
    expect(output).not.toContain('"level":50');
  }, 90_000);
});
