/**
 * The benchmark's world: one upstream Postgres (embedded, tuned once for every target), repobase
 * on it as it ships (`workers` 0, or as many as `--workers` says) and again as a single process, and PgBouncer
 * (session mode, SCRAM, the same pool size) on it too. Every target reaches the same tables as
 * the same role, `bench`.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { packageRoot } from '../src/shared/package-root.js';
import { createLogger } from '../src/shared/logger.js';
import { pgDirOf, runningPostmaster, startEmbedded } from '../src/upstream/embedded.js';
import { rolePassword } from '../src/upstream/roles.js';
import { freePort, run, start, waitFor } from './lib/proc.js';
import { ensurePgbouncer, startPgbouncer } from './lib/pgbouncer.js';

export const USER = 'bench';
export const REPO = 'bench/pgbench';
export const POOL_SIZE = 20;

export interface Conn {
  host: string;
  port: number;
  user: string;
  password: string;
  dbname: string;
}

export interface BenchEnv {
  dir: string;
  adminUrl: string;
  pgVersion: string;
  direct: Conn;
  repobase: Conn & { httpUrl: string; pid: number; key: string; workers: number };
  /** The same service limited to one process (`workers` 1): what one event loop reaches. */
  single: Conn & { httpUrl: string; pid: number };
  /** The service as shipped but holding a backend per client (`pgPoolMode` session): what pooling by transaction costs. */
  session: Conn & { httpUrl: string; pid: number };
  /** The upstream's postmaster: its children are the backends of every target. */
  postgresPid: number;
  pgbouncer: (Conn & { version: string; pid: number }) | { unavailable: string };
  /**
   * Starts one more repobase on this world (`workers` as `REPOBASE_WORKERS` says; the same
   * user, key and repo), up and answering: a fresh process for a scenario that measures each
   * round on new instances (see FreshService). Stopped by its `stop`, or with the world.
   */
  startService(workers: number): Promise<FreshService>;
  stop(): Promise<void>;
}

/**
 * A repobase process started for a round. One process of a build can spend 15–45 % more CPU per
 * REST request than another of the same build, started the same way, for as long as it lives
 * (seen on this machine in A/A runs: the same ratio in every round of a run); a round on fresh
 * processes samples that spread instead of keeping one draw for the whole run.
 */
export interface FreshService {
  httpUrl: string;
  wirePort: number;
  pid: number;
  workers: number;
  stop(): Promise<void>;
}

/**
 * The repobase to measure on `cores` cores of its own: the one-process service on one core (what
 * it starts with there), else the service as shipped (`workers` 0, or `--workers`).
 */
export function repobaseOn(env: BenchEnv, cores: number): { service: BenchEnv['single']; processes: number } {
  return cores === 1 ? { service: env.single, processes: 1 } : { service: env.repobase, processes: env.repobase.workers };
}

/** libpq keyword/value string (pgbench, psql). */
export function conninfo(c: Conn, sslmode: 'disable' | 'require' = 'disable'): string {
  const q = (v: string | number) => `'${String(v).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `host=${q(c.host)} port=${q(c.port)} user=${q(c.user)} password=${q(c.password)} dbname=${q(c.dbname)} sslmode=${sslmode}`;
}

export const BIN = join(packageRoot, 'bin', 'repobase.js');

/** The environment of a measured repobase on `upstreamUrl` (a fresh server secret each time). */
export function serviceEnv(upstreamUrl: string, dataDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    REPOBASE_UPSTREAM_URL: upstreamUrl,
    REPOBASE_DATA_DIR: dataDir,
    REPOBASE_SECRET: randomBytes(16).toString('hex'),
    REPOBASE_LOG_LEVEL: 'warn',
    REPOBASE_PG_SESSIONS_PER_USER: String(POOL_SIZE * 2),
    REPOBASE_UPSTREAM_POOL_MAX: String(POOL_SIZE),
    // The REST scenarios measure throughput, not the per-user rate limit; the connections
    // scenario opens 10,000 as one user, past the default limit of connections per user.
    REPOBASE_RATE_LIMIT_MAX: '100000000',
    REPOBASE_USER_MAX_CONNECTIONS: '0',
  };
}

/** Creates the benchmark's user and its pgbench repo with the admin commands of `bin`; returns the user's API key. */
export async function createBenchUser(env: NodeJS.ProcessEnv, bin = BIN): Promise<string> {
  const created = await run(process.execPath, [bin, 'user', 'create', USER], { env });
  if (created.code !== 0) throw new Error(`repobase user create failed: ${created.stderr}`);
  const repo = await run(process.execPath, [bin, 'repo', 'create', REPO], { env });
  if (repo.code !== 0) throw new Error(`repobase repo create failed: ${repo.stderr}`);
  return created.stdout.trim();
}

export interface BenchEnvOptions {
  /** The repobase to run: `bin/repobase.js` of this build (default) or of another (`--against`). */
  bin?: string;
  /** Start PgBouncer too (default): the anchors run once, beside this build only. */
  pgbouncer?: boolean;
  /** Said in the log lines: which build this world is for. */
  label?: string;
  /**
   * `workers` of the service "as shipped" (`--workers`); default 0, the build's own default. The
   * other target is always one process.
   */
  workers?: number;
}

/**
 * Starts the benchmark's world: its own upstream Postgres and, on it, repobase (`opts.bin`) as
 * shipped and as one process, and PgBouncer. An `--against` run starts a second world for the
 * other build, with a Postgres of its own: each build's control plane migrates its own database.
 */
export async function startBenchEnv(log: (s: string) => void, opts: BenchEnvOptions = {}): Promise<BenchEnv> {
  const bin = opts.bin ?? BIN;
  const of = opts.label ? ` for ${opts.label}` : '';
  const dir = await mkdtemp(join(tmpdir(), 'repobase-bench-'));
  await chmod(dir, 0o755);
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    log(`starting the upstream Postgres${of}`);
    const pgPort = await freePort();
    // Durability off for every target alike: the benchmark measures the proxies, not the disk.
    const cluster = await startEmbedded({
      dataDir: join(dir, 'upstream'),
      port: pgPort,
      database: 'bench',
      log: createLogger('warn'),
      settings: { max_connections: '400', shared_buffers: '256MB', fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
    });
    stops.push(() => cluster.stop());
    const admin = new pg.Client({ connectionString: cluster.adminUrl });
    admin.on('error', () => undefined);
    await admin.connect();
    stops.push(() => admin.end());
    const pgVersion = (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;

    log(`starting repobase${of}`);
    const env = serviceEnv(cluster.adminUrl, join(dir, 'repobase'));
    const secret = env.REPOBASE_SECRET!;
    const key = await createBenchUser(env, bin);
    const serve = async (workers: string, more: Record<string, string> = {}) => {
      const [httpPort, wirePort] = [await freePort(), await freePort()];
      const service = start('repobase', bin, ['serve'], { ...env, ...more, REPOBASE_HTTP_PORT: String(httpPort), REPOBASE_PG_PORT: String(wirePort), REPOBASE_WORKERS: workers });
      stops.push(service.stop);
      const httpUrl = `http://127.0.0.1:${httpPort}`;
      // The banner comes once every worker serves.
      await waitFor('repobase', async () => service.output().includes('repobase is running') && (await fetch(`${httpUrl}/healthz`)).ok);
      const workersLine = /repobase is running(?: \((\d+) workers\))?/.exec(service.output());
      return { httpUrl, wirePort, pid: service.child.pid!, workers: Number(workersLine?.[1] ?? 1), stop: service.stop };
    };
    const shipped = await serve(String(opts.workers ?? 0));
    const single = await serve('1');
    const inSession = await serve(String(opts.workers ?? 0), { REPOBASE_PG_POOL_MODE: 'session' });
    // Direct and PgBouncer sessions see the same tables unqualified, as repobase's database name does.
    await admin.query(`ALTER ROLE ${USER} SET search_path = "${REPO}"`);

    const password = rolePassword(secret, USER);
    const direct: Conn = { host: '127.0.0.1', port: pgPort, user: USER, password, dbname: 'bench' };
    const repobase = { host: '127.0.0.1', port: shipped.wirePort, user: USER, password: key, dbname: REPO, httpUrl: shipped.httpUrl, pid: shipped.pid, key, workers: shipped.workers };
    const singleConn = { host: '127.0.0.1', port: single.wirePort, user: USER, password: key, dbname: REPO, httpUrl: single.httpUrl, pid: single.pid };
    const session = { host: '127.0.0.1', port: inSession.wirePort, user: USER, password: key, dbname: REPO, httpUrl: inSession.httpUrl, pid: inSession.pid };

    let problem: string | undefined = 'not started for this build';
    if (opts.pgbouncer !== false) {
      log('starting PgBouncer');
      problem = await ensurePgbouncer();
    }
    let pgbouncer: BenchEnv['pgbouncer'] = { unavailable: problem ?? '' };
    if (!problem) {
      const bport = await freePort();
      const conn: Conn = { host: '127.0.0.1', port: bport, user: USER, password, dbname: 'bench' };
      const certDir = join(dir, 'repobase');
      // Same certificate as repobase's (generated at its start), so both TLS rows do the same crypto.
      const bouncer = await startPgbouncer(
        { dir: join(dir, 'pgbouncer'), port: bport, upstreamPort: pgPort, database: 'bench', user: USER, password, poolMode: 'session', poolSize: POOL_SIZE * 2, tlsCert: join(certDir, 'tls-cert.pem'), tlsKey: join(certDir, 'tls-key.pem') },
        async () => (await run('psql', [conninfo(conn), '-Atc', 'SELECT 1'])).stdout.trim() === '1',
      );
      stops.push(bouncer.stop);
      pgbouncer = { ...conn, version: bouncer.version, pid: bouncer.pid };
    }
    const postgresPid = await runningPostmaster(pgDirOf(join(dir, 'upstream')));
    if (postgresPid === undefined) throw new Error('the upstream postmaster is not running');
    const startService = (workers: number) => serve(String(workers));
    return { dir, adminUrl: cluster.adminUrl, pgVersion, direct, repobase, single: singleConn, session, postgresPid, pgbouncer, startService, stop };
  } catch (err: unknown) {
    await stop();
    throw err;
  }
}

/** The world of the build an `--against` run compares with, and the suffix of its targets' names (` @d724f64`). */
export interface RefEnv {
  env: BenchEnv;
  suffix: string;
  /** Whether that build pools wire clients by transaction (see `RefBuild`). */
  poolsByTransaction: boolean;
}
