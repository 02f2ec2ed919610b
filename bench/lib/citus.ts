/**
 * A Citus cluster of one coordinator and some workers on loopback, for the scale-out tests and the
 * `citus` benchmark: Debian's PostgreSQL 15 binaries (with Citus installed into them), each node
 * a data dir in one temporary directory, started with `pg_ctl` as the `postgres` user when run as
 * root. Every node trusts loopback connections, so the coordinator reaches the workers as the
 * role running a statement (what `pg_hba.conf` or `pg_dist_authinfo` arrange in production).
 *
 * Schema-based sharding is on: every schema created afterwards — every repo — becomes a
 * distributed schema living whole on one worker.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile, appendFile, readFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './proc.js';

const exec = promisify(execFile);

/** Where Debian's PostgreSQL 15 keeps its server binaries; Citus is installed beside them. */
export const CITUS_PG_BIN = process.env.REPOBASE_TEST_CITUS_BIN ?? '/usr/lib/postgresql/15/bin';

export interface CitusNode {
  readonly host: string;
  readonly port: number;
}

export interface CitusCluster {
  readonly coordinator: CitusNode;
  readonly workers: readonly CitusNode[];
  /** The database every node has Citus in. */
  readonly database: string;
  /** Superuser URL of `database` on the coordinator (or on another node). */
  url(node?: CitusNode): string;
  /** Process id of a node's postmaster (the coordinator's by default): its children are the backends. */
  postmasterPid(node?: CitusNode): Promise<number>;
  stop(): Promise<void>;
}

/** Why this machine cannot start a Citus cluster, or undefined when it can. */
export function citusMissing(bin = CITUS_PG_BIN): string | undefined {
  if (!existsSync(join(bin, 'postgres'))) return `no PostgreSQL server binaries in ${bin}`;
  if (!existsSync(join(bin, '..', 'lib', 'citus.so'))) return `Citus is not installed into the PostgreSQL of ${bin} (no citus.so in ${join(bin, '..', 'lib')})`;
  return undefined;
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/** Postgres refuses to run as root: as root, every node runs as `postgres`. */
async function runAs(): Promise<RunAs> {
  if (userInfo().uid !== 0) return {};
  const { stdout } = await exec('id', ['-u', 'postgres']).catch(() => {
    throw new Error('running as root, a Citus test cluster needs a "postgres" system user to run as (Debian\'s postgresql package creates it)');
  });
  const gid = (await exec('id', ['-g', 'postgres'])).stdout;
  return { uid: Number(stdout.trim()), gid: Number(gid.trim()) };
}

/** Node settings: fast and disposable (no fsync), logical WAL for online repo moves. */
function settings(port: number, dir: string, citus: boolean): string {
  return [
    `port = ${port}`,
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = '${dir}'`,
    ...(citus ? [`shared_preload_libraries = 'citus'`] : []),
    `wal_level = logical`,
    `max_connections = 300`,
    `max_worker_processes = 16`,
    `fsync = off`,
    `synchronous_commit = off`,
    `full_page_writes = off`,
    `shared_buffers = 64MB`,
    ...(citus ? [`citus.log_distributed_deadlock_detection = off`] : []),
    '',
  ].join('\n');
}

/** Makes the first node the coordinator of the others, with schema-based sharding on. */
async function formCluster(coordinatorUrl: string, nodes: readonly CitusNode[]): Promise<void> {
  const coordinator = new pg.Client({ connectionString: coordinatorUrl });
  await coordinator.connect();
  try {
    await coordinator.query('SELECT citus_set_coordinator_host($1, $2)', [nodes[0]!.host, nodes[0]!.port]);
    for (const node of nodes.slice(1)) await coordinator.query('SELECT citus_add_node($1, $2)', [node.host, node.port]);
    await coordinator.query('ALTER SYSTEM SET citus.enable_schema_based_sharding = on');
    await coordinator.query('SELECT pg_reload_conf()');
  } finally {
    await coordinator.end();
  }
}

/**
 * Starts a coordinator and `workers` workers; rejects with the failing node's log on error. With
 * `citus: false`, one plain PostgreSQL 15 node (the version Debian's pg_dump 15 can dump).
 */
export async function startCitus(opts: { workers?: number; database?: string; bin?: string; citus?: boolean } = {}): Promise<CitusCluster> {
  const bin = opts.bin ?? CITUS_PG_BIN;
  const citus = opts.citus ?? true;
  const missing = citus ? citusMissing(bin) : existsSync(join(bin, 'postgres')) ? undefined : `no PostgreSQL server binaries in ${bin}`;
  if (missing) throw new Error(`${missing}; CI installs Citus before the tests (see .ci/run)`);
  const database = opts.database ?? 'repobase';
  const as = await runAs();
  const root = await mkdtemp(join(tmpdir(), 'repobase-citus-'));
  if (as.uid !== undefined) await chown(root, as.uid, as.gid!);
  const run = (cmd: string, args: string[]) => exec(join(bin, cmd), args, { ...as, cwd: root, env: { ...process.env, LC_ALL: 'C', HOME: root } });
  const nodes: { node: CitusNode; dir: string }[] = [];
  const stop = async () => {
    await Promise.all(nodes.map(({ dir }) => run('pg_ctl', ['-D', dir, '-m', 'immediate', 'stop']).catch(() => undefined)));
    await rm(root, { recursive: true, force: true });
  };
  try {
    const count = citus ? 1 + (opts.workers ?? 2) : 1;
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const dir = join(root, `n${i}`);
        const port = await freePort();
        await run('initdb', ['-D', dir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
        await appendFile(join(dir, 'postgresql.conf'), settings(port, root, citus));
        await writeFile(join(dir, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\n');
        if (as.uid !== undefined) await chown(join(dir, 'pg_hba.conf'), as.uid, as.gid!);
        nodes[i] = { node: { host: '127.0.0.1', port }, dir };
        await run('pg_ctl', ['-D', dir, '-l', join(root, `n${i}.log`), '-w', '-t', '60', 'start']).catch(async (err: unknown) => {
          const log = await readFile(join(root, `n${i}.log`), 'utf8').catch(() => '');
          throw new Error(`Citus node ${i} did not start: ${String(err)}\n${log.slice(-2000)}`);
        });
      }),
    );
    const url = (node: CitusNode = nodes[0]!.node, db = database) => `postgres://postgres@${node.host}:${node.port}/${db}`;
    await Promise.all(
      nodes.map(async ({ node }) => {
        const admin = new pg.Client({ connectionString: url(node, 'postgres') });
        await admin.connect();
        await admin.query(`CREATE DATABASE ${database}`).finally(() => admin.end());
        if (!citus) return;
        const c = new pg.Client({ connectionString: url(node) });
        await c.connect();
        await c.query('CREATE EXTENSION citus').finally(() => c.end());
      }),
    );
    if (citus) await formCluster(url(), nodes.map((n) => n.node));
    return {
      coordinator: nodes[0]!.node,
      workers: nodes.slice(1).map((n) => n.node),
      database,
      url: (node?: CitusNode) => url(node),
      postmasterPid: async (node = nodes[0]!.node) => {
        const { dir } = nodes.find((n) => n.node === node) ?? nodes[0]!;
        return Number((await readFile(join(dir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      },
      stop,
    };
  } catch (err: unknown) {
    await stop();
    throw err;
  }
}
