/**
 * The upstream cluster: the embedded one, or an existing one named by `upstreamUrl`. Gives the
 * admin pool (control plane work) and the connection settings of each user's own role.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { pgDirOf, runningPostmaster, startEmbedded } from './embedded.js';
import { postgresWeights, type CpuWeight } from './cpu-weight.js';
import { fromDriverError } from './pg-error.js';
import { rolePassword } from './roles.js';
import { readOrCreateSecretFile } from './secret-file.js';
import type { UpstreamTarget } from './session.js';

export interface Cluster {
  /** Pool of the admin role: the control plane's connections. */
  readonly admin: pg.Pool;
  /** Connection settings of the admin role (for dedicated connections such as LISTEN). */
  readonly adminConfig: pg.ClientConfig;
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly secret: string;
  /** Where the data lives, for messages: "embedded Postgres in ./data/pg" or the upstream host. */
  readonly description: string;
  /** Connection settings to log in upstream as the user's own role. */
  roleConnection(role: string): pg.ClientConfig;
  /** Set when the cluster is the embedded one on this host: sets the CPU weight of the backends the service opens, and of heavy users' (cpu-weight.ts). */
  readonly weight?: CpuWeight | undefined;
  /** Checks that the admin role logs in and may create roles (a PgError saying what is wrong otherwise). */
  check(): Promise<void>;
  /** Ends the admin pool; stops the embedded cluster if this process started it. */
  close(): Promise<void>;
}

async function checkAdmin(admin: pg.Pool, where: string): Promise<void> {
  let row: { rolsuper: boolean; rolcreaterole: boolean } | undefined;
  try {
    const res = await admin.query<{ rolsuper: boolean; rolcreaterole: boolean }>(
      'SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user',
    );
    row = res.rows[0];
  } catch (err: unknown) {
    const pgErr = fromDriverError(err);
    const reason = pgErr ? `${pgErr.code} ${pgErr.message}` : String(err);
    throw new PgError(pgErr?.code ?? SqlState.ConnectionFailure, `cannot use upstream Postgres at ${where}: ${reason}`, {
      hint: 'check REPOBASE_UPSTREAM_URL: host, port, user, password and database',
    });
  }
  if (!row?.rolsuper && !row?.rolcreaterole) {
    throw new PgError(SqlState.InsufficientPrivilege, `the upstream role at ${where} has neither SUPERUSER nor CREATEROLE`, {
      hint: 'repobase creates one role per user: connect it as a role with CREATEROLE',
    });
  }
}

/**
 * TLS settings for an upstream `sslmode`, as libpq means it: `require` encrypts without checking
 * the certificate, `verify-ca`/`verify-full` check it; `prefer`/`allow`/`disable`/none stay plain.
 */
function sslOption(sslmode: string | null): { rejectUnauthorized: boolean } | undefined {
  if (sslmode === 'require') return { rejectUnauthorized: false };
  if (sslmode === 'verify-ca' || sslmode === 'verify-full') return { rejectUnauthorized: true };
  return undefined;
}

/**
 * Whether `err` (from `Cluster.check` or a control plane query) means the upstream cannot be
 * reached now — refused, timed out, shutting down or still starting up — rather than that it
 * answered no: worth retrying, where a wrong password or a missing privilege is not.
 */
export function isUnreachable(err: unknown): boolean {
  return err instanceof PgError && (err.code.startsWith('08') || err.code === SqlState.CannotConnectNow || err.code === SqlState.AdminShutdown);
}

export interface OpenClusterOptions {
  /**
   * Check the admin role before returning (default). An external upstream that may be down when
   * the service starts is opened unchecked: the control plane checks it when it connects.
   */
  check?: boolean;
  /** A serving process: takes its share of the CPU beside an embedded cluster (cpu-weight.ts). Default: no. */
  serving?: boolean;
}

/** Opens the upstream described by `config`, starting the embedded cluster when no URL is set. */
export async function openCluster(config: Config, log: Logger, opts: OpenClusterOptions = {}): Promise<Cluster> {
  const dataDir = resolve(config.dataDir);
  await mkdir(dataDir, { recursive: true, mode: 0o755 });
  const secret = config.secret || (await readOrCreateSecretFile(join(dataDir, 'secret')));
  const embedded = config.upstreamUrl
    ? undefined
    : await startEmbedded({ dataDir, port: config.embeddedPgPort, database: config.serviceDatabase, log });
  const url = new URL(config.upstreamUrl || embedded!.adminUrl);
  const ssl = sslOption(url.searchParams.get('sslmode'));
  // libpq's meaning of sslmode, not pg's (which verifies certificates for `require`).
  url.searchParams.delete('sslmode');
  const adminUrl = url.toString();
  const where = embedded ? `embedded Postgres in ${join(dataDir, 'pg')}` : `${url.hostname}:${url.port || 5432}`;
  // TCP keepalive: a connection to a host that vanished fails instead of waiting for ever.
  const adminConfig: pg.ClientConfig = { connectionString: adminUrl, connectionTimeoutMillis: config.upstreamConnectTimeoutMs, keepAlive: true, keepAliveInitialDelayMillis: 30_000, ...(ssl && { ssl }) };
  const admin = new pg.Pool({ ...adminConfig, max: 5, idleTimeoutMillis: 30_000 });
  admin.on('error', (err) => log.warn({ err }, 'idle admin connection failed'));
  try {
    if (opts.check !== false || embedded) await checkAdmin(admin, where);
  } catch (err: unknown) {
    await admin.end();
    await embedded?.stop();
    throw err;
  }
  const host = url.hostname;
  const port = Number(url.port || 5432);
  // The embedded cluster, started here or by the primary of the workers (which reach it by URL).
  const own = opts.serving === true && (embedded !== undefined || (host === '127.0.0.1' && port === config.embeddedPgPort));
  const postmaster = own ? await runningPostmaster(pgDirOf(dataDir)) : undefined;
  const weight = postmaster === undefined ? undefined : await postgresWeights(postmaster, config.upstreamNice, config.heavyUserNice, log);
  const database = decodeURIComponent(url.pathname.slice(1)) || 'postgres';
  return {
    admin,
    adminConfig,
    host,
    port,
    database,
    secret,
    description: where,
    weight,
    roleConnection: (role) => ({
      host,
      port,
      database,
      user: role,
      password: rolePassword(secret, role),
      connectionTimeoutMillis: config.upstreamConnectTimeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: 30_000,
      ...(ssl && { ssl }),
    }),
    check: () => checkAdmin(admin, where),
    close: async () => {
      await admin.end();
      await embedded?.stop();
    },
  };
}

/** Where a raw upstream session (session.ts) logs in as `role`: its derived password, the cluster's TLS. */
export function roleTarget(cluster: Pick<Cluster, 'roleConnection'>, role: string): UpstreamTarget {
  const c = cluster.roleConnection(role);
  const ssl = c.ssl;
  return {
    host: c.host ?? '127.0.0.1',
    port: c.port ?? 5432,
    database: c.database ?? 'postgres',
    user: role,
    password: typeof c.password === 'string' ? c.password : '',
    connectTimeoutMs: c.connectionTimeoutMillis,
    tls: ssl ? { rejectUnauthorized: typeof ssl === 'object' ? ssl.rejectUnauthorized !== false : true } : undefined,
  };
}
