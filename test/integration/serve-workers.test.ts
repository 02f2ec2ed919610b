/**
 * `repobase serve` with two worker processes on the same ports: connections are spread over
 * them, a cancel (wire or REST) works whichever worker its connection reaches, a user's limits
 * set by the admin CLI hold on every worker within a moment, schema events
 * reach the streams of both, a killed worker is replaced while the other's clients go on, and a
 * stop ends every process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childrenOf } from '../../bench/lib/proc.js';
import { BIN, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/cluster.js';
import { tagOf } from '../../src/wire/cancel.js';
import { freePort } from '../helpers/ports.js';

let env: Record<string, string>;
let dataDir: string;
let primary: ChildProcess;
let output = '';
let exited: Promise<number | null>;
let user: string;
let key: string;

function connect(): pg.Client {
  const client = new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user, password: key, database: 'repobase' });
  client.on('error', () => undefined);
  return client;
}

async function selectOne(): Promise<number> {
  const client = connect();
  await client.connect();
  try {
    return (await client.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n;
  } finally {
    await client.end();
  }
}

/**
 * A REST request on a connection of its own (no keep-alive agent), so that successive requests
 * are handed to the workers in turn. Resolves with the answer once its headers arrive.
 */
function restOnce(method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: Number(env.REPOBASE_HTTP_PORT),
        method,
        path: `/api/v1beta${path}`,
        agent: false,
        headers: { authorization: `Bearer ${key}`, ...(opts.body !== undefined && { 'content-type': 'application/json' }), ...opts.headers },
      },
      resolve,
    );
    req.on('error', reject);
    req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
  });
}

async function textOf(res: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of res) text += String(chunk);
  return text;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'repobase-workers-'));
  env = {
    REPOBASE_UPSTREAM_URL: await createTestDatabase(),
    REPOBASE_DATA_DIR: dataDir,
    REPOBASE_SECRET: randomBytes(16).toString('hex'),
    REPOBASE_HTTP_PORT: String(await freePort()),
    REPOBASE_PG_PORT: String(await freePort()),
    REPOBASE_WORKERS: '2',
    REPOBASE_LOG_LEVEL: 'info',
  };
  user = `workers_${randomBytes(3).toString('hex')}`;
  const created = await runCli(['user', 'create', user], env);
  expect(created.code, created.stderr).toBe(0);
  key = created.stdout.trim();
  primary = spawn(process.execPath, [BIN, 'serve'], { env: { PATH: process.env.PATH, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  primary.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  primary.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  exited = new Promise((resolve) => primary.on('exit', (code) => resolve(code)));
  for (const start = Date.now(); !output.includes('repobase is running (2 workers)'); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() - start > 30_000 || primary.exitCode !== null) throw new Error(`serve did not start:\n${output}`);
  }
});

afterAll(async () => {
  if (primary.exitCode === null) process.kill(-primary.pid!, 'SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

describe('repobase serve with two workers', () => {
  it('runs two worker processes that both answer on the shared ports', async () => {
    expect(childrenOf(primary.pid!)).toHaveLength(2);
    // Connections are handed out in turn, so these reach both workers; that a connection really
    // lands on the other worker is what the cancel test below proves (it fails without passing).
    for (let i = 0; i < 6; i++) expect(await selectOne()).toBe(1);
    const health = await fetch(`http://127.0.0.1:${env.REPOBASE_HTTP_PORT}/healthz`);
    expect(health.status).toBe(200);
  });

  it('cancels a statement whichever worker the cancel connection reaches', async () => {
    const sql = postgres({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user, password: key, database: 'repobase', max: 1, onnotice: () => undefined });
    try {
      // Each cancel is a connection of its own; in turn they reach one worker, then the other.
      for (let i = 0; i < 4; i++) {
        const started = Date.now();
        const sleeping = sql`SELECT pg_sleep(30)`;
        setTimeout(() => void sleeping.cancel(), 200);
        await expect(sleeping).rejects.toMatchObject({ code: '57014' });
        expect(Date.now() - started).toBeLessThan(5_000);
      }
    } finally {
      await sql.end();
    }
  });

  it('cancels a REST query by its X-Query-Id whichever worker the cancel reaches', async () => {
    const admin = new pg.Client({ connectionString: env.REPOBASE_UPSTREAM_URL });
    await admin.connect();
    const sleeping = async () =>
      (await admin.query("SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND query LIKE '%pg_sleep(30)%'", [user])).rowCount;
    try {
      // Each request is a connection of its own; in turn they reach one worker, then the other,
      // so some of these cancels reach the worker that does not run the query (none would be
      // answered 204 without passing it on).
      for (let i = 0; i < 4; i++) {
        const id = `workers-${i}`;
        const answer = restOnce('POST', '/query/', { body: { query_string: 'SELECT pg_sleep(30)' }, headers: { 'x-query-id': id } });
        await expect.poll(sleeping, { timeout: 5_000, interval: 20 }).toBe(1);
        const started = Date.now();
        const cancelled = await restOnce('POST', `/query/${id}/cancel`);
        expect(cancelled.statusCode, await textOf(cancelled)).toBe(204);
        const res = await answer;
        const body = JSON.parse(await textOf(res)) as { error: { code: string } };
        expect(body.error.code).toBe('57014');
        expect(Date.now() - started).toBeLessThan(2_000);
        await expect.poll(sleeping, { timeout: 1_000, interval: 20 }).toBe(0);
      }
    } finally {
      await admin.end();
    }
    // Nobody runs this one: every worker is asked, and the answer is 404.
    const unknown = await restOnce('POST', '/query/nobody-runs-this/cancel');
    expect(unknown.statusCode).toBe(404);
    expect((JSON.parse(await textOf(unknown)) as { error: { code: string } }).error.code).toBe('42704');
  });

  it('holds a limit the admin CLI sets on every worker within a moment, and goes back to the default', async () => {
    const set = await runCli(['user', 'limits', user, '--statement-timeout', '200ms'], env);
    expect(set.code, set.stderr).toBe(0);
    // Requests on connections of their own reach the workers in turn: four in a row, two each.
    const timedOut = async () => {
      const codes = await Promise.all(
        [0, 1, 2, 3].map(async () => {
          const res = await restOnce('POST', '/query/', { body: { query_string: 'SELECT pg_sleep(1)' } });
          return res.statusCode === 504 ? (JSON.parse(await textOf(res)) as { error: { code: string } }).error.code : String(res.statusCode);
        }),
      );
      return codes.every((c) => c === '57014');
    };
    await expect.poll(timedOut, { timeout: 10_000, interval: 100 }).toBe(true);
    const reset = await runCli(['user', 'limits', user, '--reset'], env);
    expect(reset.code, reset.stderr).toBe(0);
    await expect.poll(async () => (await restOnce('POST', '/query/', { body: { query_string: 'SELECT pg_sleep(0.5)' } })).statusCode, { timeout: 10_000, interval: 100 }).toBe(200);
  });

  it("counts a user's wire connections on both workers in GET /usage/", async () => {
    // Connections are handed to the workers in turn: three land on both.
    const clients = [connect(), connect(), connect()];
    for (const c of clients) await c.connect();
    try {
      const count = async () => (JSON.parse(await textOf(await restOnce('GET', '/usage/'))) as { now: { wire_connections: number } }).now.wire_connections;
      expect([await count(), await count()]).toEqual([3, 3]); // asked of one worker, then of the other
    } finally {
      for (const c of clients) await c.end();
    }
  });

  it('sends schema events to the event streams on both workers', async () => {
    expect((await restOnce('POST', '/repos/', { body: { name: 'live' } })).statusCode).toBe(201);
    const streams = await Promise.all([restOnce('GET', '/events'), restOnce('GET', '/events')]);
    const texts = streams.map((s) => {
      const seen = { text: '' };
      s.on('data', (chunk: Buffer) => (seen.text += chunk.toString()));
      return seen;
    });
    try {
      const client = connect();
      await client.connect();
      await client.query(`CREATE TABLE "${user}/live".t (a int)`);
      await client.end();
      const event = `event: schema\ndata: {"repo":"${user}/live","table":"t","command":"CREATE TABLE"}\n\n`;
      for (const seen of texts) await expect.poll(() => seen.text, { timeout: 2_000 }).toContain(event);
    } finally {
      for (const s of streams) s.destroy();
    }
  });

  it("ends a key's open wire sessions on both workers when it is revoked, or when it expires", async () => {
    const made = async (body: unknown) => {
      const res = await restOnce('POST', '/keys/', { body });
      expect(res.statusCode).toBe(201);
      return JSON.parse(await textOf(res)) as { id: string; key: string; expires_at: string | null };
    };
    /** Two sessions of `k`: connections are handed out in turn, so one on each worker (their process ids say which). */
    const sessions = async (k: string) => {
      const clients = [0, 1].map(() => new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user, password: k, database: 'repobase' }));
      const ends = clients.map((c) => new Promise<{ code?: string; message: string }>((resolve) => c.on('error', resolve)));
      for (const c of clients) await c.connect();
      const tags = clients.map((c) => tagOf((c as unknown as { processID: number }).processID));
      expect(tags[0]).not.toBe(tags[1]);
      for (const c of clients) expect((await c.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      return { clients, ends };
    };
    // Revoked through REST: the request reaches one worker; the sessions on the other end too.
    const revoked = await made({ name: 'two-workers', repos: [`${user}/live`], access: 'read' });
    const open = await sessions(revoked.key);
    const started = Date.now();
    expect((await restOnce('DELETE', `/keys/${revoked.id}`)).statusCode).toBe(204);
    for (const e of await Promise.all(open.ends)) {
      expect(e).toMatchObject({ code: '57P01', message: `terminating connection: API key "two-workers" (rb_${revoked.id}) was revoked` });
    }
    expect(Date.now() - started).toBeLessThan(5_000);
    // Expired: every worker ends its own sessions by the key's expiry.
    const brief = await made({ name: 'brief', expires_at: new Date(Date.now() + 2_500).toISOString() });
    const alive = await sessions(brief.key);
    for (const e of await Promise.all(alive.ends)) {
      expect(e).toMatchObject({ code: '57P01', message: `terminating connection: API key "brief" (rb_${brief.id}) expired at ${brief.expires_at}` });
    }
    await Promise.allSettled([...open.clients, ...alive.clients].map((c) => c.end()));
  });

  it('replaces a killed worker while the clients of the other one go on', async () => {
    const [a, b] = [connect(), connect()];
    await a.connect();
    await b.connect(); // the next connection: the other worker
    const before = childrenOf(primary.pid!);
    process.kill(before[0]!, 'SIGKILL');
    const results = await Promise.allSettled([a.query('SELECT 1 AS n'), b.query('SELECT 1 AS n')]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    await Promise.allSettled([a.end(), b.end()]);
    await expect.poll(() => output, { timeout: 15_000 }).toContain('replacement worker serving');
    expect(childrenOf(primary.pid!).filter((p) => !before.includes(p))).toHaveLength(1);
    for (let i = 0; i < 4; i++) expect(await selectOne()).toBe(1);
  });

  it('stops every worker, and itself, on SIGTERM', async () => {
    const workers = childrenOf(primary.pid!);
    primary.kill('SIGTERM');
    expect(await exited).toBe(0);
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
  });
});
