/**
 * `repobase serve` as a user runs it: a fresh data dir, the embedded Postgres, Ctrl-C (SIGINT to
 * the whole process group, as a terminal sends it), a restart that keeps the data.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, writeFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { getPriority, tmpdir } from 'node:os';
import pg from 'pg';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processAlive as alive } from '../../src/upstream/embedded.js';
import { BIN, runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';

let dataDir: string;
let env: Record<string, string>;
const running: ChildProcess[] = [];

function serve(extraEnv: Record<string, string> = {}): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  // detached: its own process group, so a group SIGINT is exactly what Ctrl-C in a terminal does.
  const child = spawn(process.execPath, [BIN, 'serve'], { env: { PATH: process.env.PATH, ...env, ...extraEnv }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function healthy(port: string, withinMs: number): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < withinMs) {
    const status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0);
    if (status === 200) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no healthy /healthz within ${withinMs} ms`);
}


async function postmasterPid(): Promise<number> {
  return Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'repobase-serve-'));
  await chmod(dataDir, 0o755);
  env = {
    REPOBASE_DATA_DIR: dataDir,
    REPOBASE_HTTP_PORT: String(await freePort()),
    REPOBASE_PG_PORT: String(await freePort()),
    REPOBASE_EMBEDDED_PG_PORT: String(await freePort()),
  };
});

afterAll(async () => {
  for (const c of running) if (c.exitCode === null && c.pid) process.kill(-c.pid, 'SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

describe('repobase serve on the embedded Postgres', () => {
  let key = '';

  it('starts on a fresh data dir, answers /healthz within 15 s and stops cleanly on Ctrl-C', async () => {
    const s = serve();
    await healthy(env.REPOBASE_HTTP_PORT!, 15_000);
    expect(s.output()).toContain(`http://127.0.0.1:${env.REPOBASE_HTTP_PORT}`);
    const pid = await postmasterPid();
    expect(await alive(pid)).toBe(true);
    // The admin CLI uses the running cluster; it must not start a second postmaster.
    const created = await runCli(['user', 'create', 'walkthrough'], env);
    expect(created.code).toBe(0);
    key = created.stdout.trim();
    expect(await postmasterPid()).toBe(pid);
    process.kill(-s.child.pid!, 'SIGINT');
    expect(await s.exited).toBe(0);
    await expect.poll(() => alive(pid), { timeout: 5000 }).toBe(false);
  });

  it('keeps users across a restart, and the admin CLI starts and stops Postgres when serve is not running', async () => {
    const list = await runCli(['user', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('walkthrough');
    await expect(readFile(join(dataDir, 'pg', 'postmaster.pid'))).rejects.toThrow(); // stopped after the command
    const s = serve();
    await healthy(env.REPOBASE_HTTP_PORT!, 15_000);
    const keys = await runCli(['key', 'list', 'walkthrough'], env);
    expect(keys.stdout).toContain(key.split('_')[1]);
    const pid = await postmasterPid();
    process.kill(-s.child.pid!, 'SIGTERM');
    expect(await s.exited).toBe(0);
    await expect.poll(() => alive(pid), { timeout: 5000 }).toBe(false);
  });

  it('gives the service a higher CPU weight than the embedded Postgres\' backends (upstreamNice)', async () => {
    const s = serve();
    await healthy(env.REPOBASE_HTTP_PORT!, 15_000);
    const wire = new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user: 'walkthrough', password: key, database: 'repobase' });
    await wire.connect();
    const password = (await readFile(join(dataDir, 'pg-superuser-password'), 'utf8')).trim();
    const admin = new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_EMBEDDED_PG_PORT), user: 'postgres', password, database: 'repobase' });
    await admin.connect();
    try {
      await wire.query('SELECT 1');
      const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE usename = 'walkthrough'");
      expect(rows.length).toBeGreaterThan(0);
      const backend = rows[0]!.pid;
      const autogroups = (await readFile('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').catch(() => '0')).trim() === '1';
      const autogroupNice = async (pid: number) => Number(/ nice (-?\d+)$/.exec((await readFile(`/proc/${pid}/autogroup`, 'utf8')).trim())?.[1]);
      if (process.getuid?.() === 0) {
        // Allowed to: the service raises itself, and Postgres stays as it is towards the rest of the host.
        expect(getPriority(s.child.pid!)).toBe(-10);
        if (autogroups) {
          expect(await autogroupNice(s.child.pid!)).toBe(-10);
          expect(await autogroupNice(backend)).toBe(0);
        }
        expect(getPriority(await postmasterPid())).toBe(0);
      } else {
        expect(getPriority(await postmasterPid())).toBe(10);
        if (autogroups) await expect.poll(() => autogroupNice(backend)).toBe(10);
        else expect(getPriority(backend)).toBe(10);
      }
    } finally {
      await wire.end();
      await admin.end();
      process.kill(-s.child.pid!, 'SIGTERM');
      await s.exited;
    }
  });

  it("lowers a heavy user's backends while another user is active, and gives their weight back after (heavyUserNice)", async () => {
    const made = await runCli(['user', 'create', 'heavyweight'], env);
    expect(made.code).toBe(0);
    const heavyKey = made.stdout.trim();
    // One process of 4 slots (users are counted per process): more than one running at once is more than a quarter of them.
    const s = serve({ REPOBASE_UPSTREAM_ACTIVE_MAX: '4', REPOBASE_WORKERS: '1' });
    await healthy(env.REPOBASE_HTTP_PORT!, 15_000);
    const client = (user: string, password: string) => new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user, password, database: 'repobase' });
    const heavy = [client('heavyweight', heavyKey), client('heavyweight', heavyKey)];
    const light = client('walkthrough', key);
    const password = (await readFile(join(dataDir, 'pg-superuser-password'), 'utf8')).trim();
    const admin = new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_EMBEDDED_PG_PORT), user: 'postgres', password, database: 'repobase' });
    for (const c of [...heavy, light, admin]) await c.connect();
    const autogroups = (await readFile('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').catch(() => '0')).trim() === '1';
    const nice = async (pid: number) => (autogroups ? Number(/ nice (-?\d+)$/.exec((await readFile(`/proc/${pid}/autogroup`, 'utf8')).trim())?.[1]) : getPriority(pid));
    const backends = async (user: string) => (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE usename = $1', [user])).rows.map((r) => r.pid);
    // As root the service raises itself and backends stay at 0; otherwise they sit at upstreamNice (10).
    const root = process.getuid?.() === 0;
    const base = root ? 0 : 10;
    let busy = true;
    try {
      const sleeping = heavy.map((c) => c.query('SELECT pg_sleep(3)'));
      const lookups = (async () => {
        while (busy) await light.query('SELECT 1');
      })();
      if (root || autogroups) {
        await expect.poll(async () => Promise.all((await backends('heavyweight')).map(nice)), { timeout: 2_500, interval: 50 }).toEqual([Math.min(19, base + 6), Math.min(19, base + 6)]);
      } else {
        await new Promise((r) => setTimeout(r, 1_000)); // could not be undone: left as it is
        expect(await Promise.all((await backends('heavyweight')).map(nice))).toEqual([base, base]);
      }
      expect(await Promise.all((await backends('walkthrough')).map(nice))).toEqual([base]);
      await Promise.all(sleeping);
      busy = false;
      await lookups;
      await expect.poll(async () => Promise.all((await backends('heavyweight')).map(nice)), { timeout: 5_000, interval: 100 }).toEqual([base, base]);
    } finally {
      busy = false;
      for (const c of [...heavy, light, admin]) await c.end();
      process.kill(-s.child.pid!, 'SIGTERM');
      await s.exited;
    }
  });

  it('stores the superuser password and secret with mode 0600', async () => {
    const { stat } = await import('node:fs/promises');
    for (const f of ['pg-superuser-password', 'secret']) {
      expect(((await stat(join(dataDir, f))).mode & 0o777).toString(8)).toBe('600');
    }
  });

  it('says clearly when the embedded port is in use', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(Number(env.REPOBASE_EMBEDDED_PG_PORT), '127.0.0.1', r));
    try {
      const r = await runCli(['user', 'list'], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`embedded Postgres cannot listen on 127.0.0.1:${env.REPOBASE_EMBEDDED_PG_PORT}: the port is already in use`);
      expect(r.stderr).toContain('REPOBASE_EMBEDDED_PG_PORT');
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      blocker.close();
    }
  });

  it('says clearly when the HTTP port is in use, and leaves no Postgres behind', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(Number(env.REPOBASE_HTTP_PORT), '127.0.0.1', r));
    try {
      const s = serve();
      expect(await s.exited).toBe(1);
      expect(s.output()).toContain(`the HTTP server cannot listen on 127.0.0.1:${env.REPOBASE_HTTP_PORT}: the port is already in use`);
      await expect(readFile(join(dataDir, 'pg', 'postmaster.pid'))).rejects.toThrow();
    } finally {
      blocker.close();
    }
  });

  it('starts over a stale postmaster.pid of a dead process, and explains one held by a live non-Postgres process', async () => {
    const pidFile = join(dataDir, 'pg', 'postmaster.pid');
    const lockFile = (pid: number) => `${pid}\n${join(dataDir, 'pg')}\n0\n${env.REPOBASE_EMBEDDED_PG_PORT}\n\n\n`;
    await writeFile(pidFile, lockFile(999999));
    expect((await runCli(['user', 'list'], env)).code).toBe(0);
    // A live process of the user Postgres runs as (a PID reused after a crash): Postgres refuses.
    const owner = process.getuid?.() === 0 ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) } : {};
    const squatter = spawn('sleep', ['30'], { ...owner, stdio: 'ignore' });
    try {
      await writeFile(pidFile, lockFile(squatter.pid!));
      const r = await runCli(['user', 'list'], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`names PID ${squatter.pid}, which is not a Postgres on this data directory`);
      expect(r.stderr).toContain('delete that postmaster.pid');
    } finally {
      squatter.kill();
      await rm(pidFile, { force: true });
    }
  });

  it.runIf(process.getuid?.() === 0)('also runs as an ordinary user (Postgres then runs as that user)', async () => {
    const own = await mkdtemp(join(tmpdir(), 'repobase-nobody-'));
    execFileSync('chown', ['nobody', own]);
    try {
      const port = String(await freePort());
      const asNobody = (args: string[]) =>
        execFileSync('runuser', ['-u', 'nobody', '--', 'env', `PATH=${process.env.PATH}`, `REPOBASE_DATA_DIR=${own}`, `REPOBASE_EMBEDDED_PG_PORT=${port}`, process.execPath, BIN, ...args]).toString();
      expect(asNobody(['user', 'create', 'plain'])).toMatch(/^rb_/);
      expect(asNobody(['user', 'list'])).toContain('plain');
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });
});
