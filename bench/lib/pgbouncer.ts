/**
 * PgBouncer, the anchor the proxies are measured against: installed from Debian if missing, run
 * (as the `postgres` user when root: it refuses to run as root) with SCRAM, TLS on the same
 * certificate as repobase, and the pool mode asked for.
 */
import { chown, readFile, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { run, start, waitFor } from './proc.js';

export interface PgbouncerOptions {
  /** A directory of its own (config, user list, log). */
  dir: string;
  port: number;
  /** Where Postgres listens (127.0.0.1), and its database. */
  upstreamPort: number;
  database: string;
  user: string;
  password: string;
  poolMode: 'session' | 'transaction';
  /** Server connections per (database, user). */
  poolSize: number;
  /** The certificate and key to serve TLS with. */
  tlsCert: string;
  tlsKey: string;
}

export interface Pgbouncer {
  version: string;
  pid: number;
  stop(): Promise<void>;
}

/** Why PgBouncer cannot run here, or undefined once it is installed. */
export async function ensurePgbouncer(): Promise<string | undefined> {
  if ((await run('sh', ['-c', 'command -v pgbouncer'])).code === 0) return undefined;
  if (userInfo().uid !== 0) return 'pgbouncer is not installed (apt-get install pgbouncer)';
  process.stderr.write('installing pgbouncer from Debian…\n');
  const r = await run('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pgbouncer']);
  return r.code === 0 ? undefined : `pgbouncer could not be installed: ${r.stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
}

/** Starts PgBouncer and waits until `ready` (a probe through it) holds. */
export async function startPgbouncer(o: PgbouncerOptions, ready: () => Promise<boolean>): Promise<Pgbouncer> {
  await run('mkdir', ['-p', o.dir]);
  await writeFile(join(o.dir, 'userlist.txt'), `"${o.user}" "${o.password}"\n`);
  await writeFile(
    join(o.dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${o.database} = host=127.0.0.1 port=${o.upstreamPort} dbname=${o.database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${o.port}`,
      "unix_socket_dir = ''",
      'auth_type = scram-sha-256',
      `auth_file = ${join(o.dir, 'userlist.txt')}`,
      `pool_mode = ${o.poolMode}`,
      `default_pool_size = ${o.poolSize}`,
      'max_client_conn = 2000',
      'ignore_startup_parameters = extra_float_digits,options',
      `logfile = ${join(o.dir, 'pgbouncer.log')}`,
      'client_tls_sslmode = allow',
      `client_tls_cert_file = ${join(o.dir, 'tls-cert.pem')}`,
      `client_tls_key_file = ${join(o.dir, 'tls-key.pem')}`,
      '',
    ].join('\n'),
  );
  await writeFile(join(o.dir, 'tls-cert.pem'), await readFile(o.tlsCert));
  await writeFile(join(o.dir, 'tls-key.pem'), await readFile(o.tlsKey), { mode: 0o600 });
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    for (const f of ['', 'userlist.txt', 'pgbouncer.ini', 'tls-cert.pem', 'tls-key.pem']) await chown(join(o.dir, f), uid, gid);
  }
  const version = (await run('pgbouncer', ['--version'])).stdout.split('\n')[0] ?? 'pgbouncer';
  const ini = join(o.dir, 'pgbouncer.ini');
  const bouncer = asRoot ? start('pgbouncer', 'runuser', ['-u', 'postgres', '--', 'pgbouncer', ini], process.env) : start('pgbouncer', 'pgbouncer', [ini], process.env);
  try {
    await waitFor('pgbouncer', ready, 15_000);
  } catch (err: unknown) {
    await bouncer.stop();
    throw new Error(`${String(err)}\n${bouncer.output()}`);
  }
  return { version, pid: bouncer.child.pid!, stop: bouncer.stop };
}
