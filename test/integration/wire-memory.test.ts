/**
 * Bounded memory: a client streaming into the wire front end goes at Postgres' pace, never into
 * the proxy's heap. The service runs as a process of its own (`repobase serve`, one process), so
 * the resident memory sampled is the service's alone: a COPY FROM STDIN of 512 MiB, four of
 * 128 MiB at once, and a pipelined batch of 64 MiB behind a statement that fails after a while.
 * The limits are generous (64 MiB of growth where each client costs the proxy well under 2 MiB):
 * without flow control the same runs grow it by hundreds of MiB.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rssOf, run } from '../../bench/lib/proc.js';
import { BackendCode, buildBind, buildExecute, buildParse, buildSync } from '../../src/protocol/index.js';
import { openUpstreamSession, type UpstreamSession, type UpstreamTarget } from '../../src/upstream/session.js';
import { rolePassword } from '../../src/upstream/roles.js';
import { BIN, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/cluster.js';
import { freePort } from '../helpers/ports.js';

const MiB = 1024 * 1024;
/** Growth of the service's RSS allowed while clients stream into it. */
const GROWTH_LIMIT = 64 * MiB;

let env: Record<string, string>;
let dataDir: string;
let service: ChildProcess;
let output = '';
let user: string;
let key: string;
const repo = () => `${user}/mem`;

function connect(): postgres.Sql {
  return postgres({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user, password: key, database: repo(), max: 1, onnotice: () => undefined });
}

/** The most the service's RSS grew above `base` while `work` ran, sampled every 50 ms. */
async function peakGrowth(work: () => Promise<unknown>): Promise<number> {
  const base = rssOf(service.pid!);
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(service.pid!))), 50);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, rssOf(service.pid!)) - base;
}

/**
 * `psql \copy` of `bytes` of rows of `rowBytes` (a whole number of them) into the repo's unlogged
 * table, the rows made by `yes`: the client is as fast as it gets, as when a user loads a big file.
 * Small rows cost Postgres more per byte.
 */
async function copyIn(bytes: number, rowBytes = 1024): Promise<void> {
  const row = `1\t${'x'.repeat(rowBytes - 3)}`;
  const url = `postgresql://${user}:${key}@127.0.0.1:${env.REPOBASE_PG_PORT}/${encodeURIComponent(repo())}?sslmode=disable`;
  const r = await run('psql', [url, '-X', '-v', 'ON_ERROR_STOP=1', '-c', `\\copy sink (id, pad) FROM PROGRAM 'yes "${row}" | head -c ${bytes - (bytes % rowBytes)}'`], { timeoutMs: 170_000 });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout.trim()).toBe(`COPY ${Math.floor(bytes / rowBytes)}`);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'repobase-memory-'));
  env = {
    REPOBASE_UPSTREAM_URL: await createTestDatabase(),
    REPOBASE_DATA_DIR: dataDir,
    REPOBASE_SECRET: randomBytes(16).toString('hex'),
    REPOBASE_HTTP_PORT: String(await freePort()),
    REPOBASE_PG_PORT: String(await freePort()),
    REPOBASE_WORKERS: '1',
    REPOBASE_LOG_LEVEL: 'warn',
  };
  user = `mem_${randomBytes(3).toString('hex')}`;
  const created = await runCli(['user', 'create', user], env);
  expect(created.code, created.stderr).toBe(0);
  key = created.stdout.trim();
  const made = await runCli(['repo', 'create', repo()], env);
  expect(made.code, made.stderr).toBe(0);
  service = spawn(process.execPath, [BIN, 'serve'], { env: { PATH: process.env.PATH, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  service.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  service.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  for (const start = Date.now(); !output.includes('repobase is running'); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() - start > 30_000 || service.exitCode !== null) throw new Error(`serve did not start:\n${output}`);
  }
  const sql = connect();
  await sql`CREATE UNLOGGED TABLE sink (id int, pad text)`;
  await sql.end();
  await copyIn(8 * MiB); // warm: code paths compiled, buffers of a COPY made once
}, 60_000);

afterAll(async () => {
  if (service?.exitCode === null) process.kill(-service.pid!, 'SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

describe('a client streaming into the wire front end', () => {
  it('copies 512 MiB in while the service grows by less than 64 MiB', async () => {
    const growth = await peakGrowth(() => copyIn(512 * MiB));
    expect(growth).toBeLessThan(GROWTH_LIMIT);
    const sql = connect();
    await sql`TRUNCATE sink`;
    await sql.end();
  }, 180_000);

  it('copies four files of 128 MiB at once within the same bound', async () => {
    const growth = await peakGrowth(() => Promise.all([0, 1, 2, 3].map(() => copyIn(128 * MiB, 64))));
    expect(growth).toBeLessThan(GROWTH_LIMIT);
    const sql = connect();
    await sql`TRUNCATE sink`;
    await sql.end();
  }, 180_000);

  it("stops reading a pipelined batch behind a failing statement at about Postgres' pace, not buffering the rest", async () => {
    const url = new URL(env.REPOBASE_UPSTREAM_URL as string);
    const direct: UpstreamTarget = { host: url.hostname, port: Number(url.port), database: url.pathname.slice(1), user, password: rolePassword(env.REPOBASE_SECRET as string, user) };
    const through: UpstreamTarget = { host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), database: repo(), user, password: key };
    const directly = await writtenBeforeError(await openUpstreamSession(direct, {}));
    let throughProxy = 0;
    const growth = await peakGrowth(async () => (throughProxy = await writtenBeforeError(await openUpstreamSession(through, {}))));
    // Directly, what the sockets' buffers take (a few MiB); through the proxy, two hops of them
    // and its high-water mark. Without flow control the proxy read all 64 MiB at once.
    expect(throughProxy).toBeLessThan(Math.max(2 * directly, 8 * MiB) + 4 * MiB);
    expect(growth).toBeLessThan(GROWTH_LIMIT);
  }, 60_000);
});

/**
 * Sends a statement that fails after a second, then 64 MiB of a pipelined batch behind it (Bind and
 * Execute of a 32 KiB parameter), writing as fast as the socket takes it; returns the bytes written
 * when the error came back. Then the Sync: the session goes on.
 */
async function writtenBeforeError(session: UpstreamSession): Promise<number> {
  const socket = session.socket;
  let errored = false;
  let ready: () => void = () => undefined;
  const readyForQuery = new Promise<void>((r) => (ready = r));
  socket.on('data', (chunk: Buffer) =>
    session.reader.push(chunk, (code) => {
      if (code === BackendCode.ErrorResponse) errored = true;
      if (code === BackendCode.ReadyForQuery) ready();
    }),
  );
  socket.write(Buffer.concat([buildParse('', 'SELECT 1 / (g - 1) FROM pg_sleep(1), generate_series(1, 1) g'), bind('', []), buildExecute('')]));
  socket.write(buildParse('pad', 'SELECT length($1::text)'));
  const one = Buffer.concat([bind('pad', [Buffer.from('p'.repeat(32 * 1024))]), buildExecute('')]);
  let written = 0;
  let atError: number | undefined;
  for (let i = 0; i < 2048; i++) {
    if (errored && atError === undefined) atError = written;
    written += one.length;
    if (!socket.write(one)) await new Promise((r) => socket.once('drain', r));
  }
  socket.write(buildSync());
  await readyForQuery;
  socket.destroy();
  return atError ?? written;
}

function bind(statement: string, params: Buffer[]): Buffer {
  return buildBind({ portal: '', statement, paramFormats: [], params, resultFormats: [] });
}
