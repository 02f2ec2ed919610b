/**
 * Many clients, few backends: pgbench with 200 clients through repobase as it ships (pooling by
 * transaction), through PgBouncer in transaction mode (the same number of backends per user),
 * and directly to Postgres with one backend per client; at least 20 s a run (pgbench counts the
 * time its 200 connections take to open in the run, and reports no TPS for a run they outlast).
 * Each target's TPS, the most backends of the bench user it held at once (sampled every 100 ms) and
 * a proxy's CPU per transaction; rounds interleaved as the wire scenarios' (`interleave`: the
 * order reversed every other round, an uncounted short run before each measured one, so that no
 * target is measured while its pool fills again after closing its idle backends).
 *
 * `-M simple` and `-S -M simple`: PgBouncer 1.18 (Debian's) keeps no prepared statements in
 * transaction mode, so `-M prepared` is not a fair fight there.
 *
 * `ownCores`: the same with the proxies on cores of their own (`taskset`, as in the wire
 * scenarios): pgbench and Postgres on the first half of the CPUs, repobase and PgBouncer on the
 * rest, as when the proxies run on machines apart from the database. The `--against` build is not
 * run there (its A/B is the shared cores' one).
 */
import { join } from 'node:path';
import pg from 'pg';
import { conninfo, POOL_SIZE, repobaseOn, USER, type BenchEnv, type Conn, type RefEnv } from '../env.js';
import { cpuSplit, freePort, pinTree, run } from '../lib/proc.js';
import { startPgbouncer } from '../lib/pgbouncer.js';
import { fmt } from '../lib/stats.js';
import { interleave, type BackendsWatch, type WireResult, type WireScenario, type WireTarget } from './wire.js';

export const CLIENTS_SCENARIOS: WireScenario[] = [
  { name: 'pgbench TPC-B -M simple', args: ['-M', 'simple'], tls: false, writes: true },
  { name: 'pgbench -S -M simple', args: ['-S', '-M', 'simple'], tls: false },
];

/** 200 direct connections take seconds to open on a busy machine, and pgbench counts that time in the run. */
const MIN_SECONDS = 20;

/** This build's repobase target (the ref's is the same with its suffix). */
export const CLIENTS_REPOBASE = 'repobase (transaction)';
const BOUNCER = 'PgBouncer (transaction)';
const DIRECT = 'direct (a backend per client)';

export interface ClientsResult {
  clients: number;
  /** Set when the proxies ran on cores of their own: pgbench and Postgres on `loadCpus`, repobase and PgBouncer on `proxyCpus`. */
  cores?: { loadCpus: number[]; proxyCpus: number[] };
  /** Why the `--against` build was not run (it has no pooling by transaction). */
  refNotRun?: string;
  /** Each target's TPS, latency, the most backends it held, and a proxy's CPU per transaction. */
  results: WireResult[];
}

/**
 * The backends of the bench user that `work` used: the most, sampled every 100 ms, that were busy
 * or had been since it started (a target's pooled backends left idle by the run before do not count).
 */
async function peakBackends<T>(admin: pg.Client, work: () => Promise<T>): Promise<{ value: T; peak: number }> {
  const since = (await admin.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;
  let peak = 0;
  let done = false;
  const running = work();
  const sampling = (async () => {
    while (!done) {
      const { rows } = await admin.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND backend_type = 'client backend' AND (state <> 'idle' OR state_change >= $2)",
        [USER, since],
      );
      peak = Math.max(peak, rows[0]!.n);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    return { value: await running, peak };
  } finally {
    done = true;
    await sampling;
  }
}

/**
 * With `ref`, that build's repobase as shipped too, on its own upstream, in the same rounds — if it
 * pools by transaction: a build before that holds a backend per client and refuses clients past its
 * users' limit (one that did, d724f64, was left re-resetting its sessions in a loop afterwards,
 * burning CPU under every scenario after it).
 */
export async function runClients(
  env: BenchEnv,
  opts: { rounds: number; seconds: number; clients: number; ownCores?: boolean; scenarios?: number },
  log: (s: string) => void,
  refEnv?: RefEnv,
): Promise<ClientsResult | string> {
  if ('unavailable' in env.pgbouncer) return `PgBouncer unavailable: ${env.pgbouncer.unavailable}`;
  const split = opts.ownCores ? await cpuSplit() : undefined;
  if (typeof split === 'string') return split;
  const asked = split ? undefined : refEnv; // on cores of their own, this build alone
  const ref = asked?.poolsByTransaction ? asked : undefined;
  const refNotRun = asked && !ref ? `repobase${asked.suffix} not run: that build has no pooling by transaction (${opts.clients} clients would be refused past its ${POOL_SIZE * 2} backends per user)` : undefined;
  if (refNotRun) log(refNotRun);
  const port = await freePort();
  const bouncerConn: Conn = { host: '127.0.0.1', port, user: USER, password: env.direct.password, dbname: 'bench' };
  const certDir = join(env.dir, 'repobase');
  const bouncer = await startPgbouncer(
    { dir: join(env.dir, 'pgbouncer-transaction'), port, upstreamPort: env.direct.port, database: 'bench', user: USER, password: env.direct.password, poolMode: 'transaction', poolSize: POOL_SIZE * 2, tlsCert: join(certDir, 'tls-cert.pem'), tlsKey: join(certDir, 'tls-key.pem') },
    async () => (await run('psql', [conninfo(bouncerConn), '-Atc', 'SELECT 1'])).stdout.trim() === '1',
  );
  // On cores of its own, repobase runs as many processes as it has cores there (see repobaseOn).
  const repobase = split ? repobaseOn(env, split.proxyCpus.length).service : env.repobase;
  const admins: pg.Client[] = [];
  const adminOf = async (world: BenchEnv) => {
    const admin = new pg.Client({ connectionString: world.adminUrl });
    admin.on('error', () => undefined);
    admins.push(admin);
    await admin.connect();
    return admin;
  };
  try {
    if (split) {
      await pinTree(env.postgresPid, split.loadCpus);
      for (const pid of [repobase.pid, bouncer.pid]) await pinTree(pid, split.proxyCpus);
    }
    const admin = await adminOf(env);
    /** Each target (tables reset through its world's direct connection), and that Postgres' admin, where its backends are counted. */
    const targets: { target: WireTarget; admin: pg.Client }[] = [
      { target: { name: CLIENTS_REPOBASE, conn: repobase, direct: env.direct, pid: repobase.pid }, admin },
      ...(ref ? [{ target: { name: CLIENTS_REPOBASE + ref.suffix, conn: ref.env.repobase, direct: ref.env.direct, pid: ref.env.repobase.pid }, admin: await adminOf(ref.env) }] : []),
      { target: { name: BOUNCER, conn: bouncerConn, direct: env.direct, pid: bouncer.pid }, admin },
      { target: { name: DIRECT, conn: env.direct, direct: env.direct }, admin },
    ];
    const adminFor = new Map(targets.map((t) => [t.target.name, t.admin]));
    const watch: BackendsWatch = async (t, work) => {
      const { value, peak } = await peakBackends(adminFor.get(t.name)!, work);
      return { run: value, backends: peak };
    };
    const results = await interleave(
      CLIENTS_SCENARIOS.slice(0, opts.scenarios),
      () => targets.map((t) => t.target),
      { rounds: opts.rounds, seconds: Math.max(opts.seconds, MIN_SECONDS), clients: opts.clients },
      log,
      split?.loadCpus,
      watch,
    );
    return { clients: opts.clients, ...(split ? { cores: { loadCpus: split.loadCpus, proxyCpus: split.proxyCpus } } : {}), refNotRun, results };
  } finally {
    if (split) for (const pid of [env.postgresPid, repobase.pid]) await pinTree(pid, split.all).catch(() => undefined);
    for (const admin of admins) await admin.end().catch(() => undefined);
    await bouncer.stop();
  }
}

const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? a / b : NaN);

/** The report's table. */
export function clientsLines(r: ClientsResult): string[] {
  const tps = (row: ClientsResult['results'][number], t: string) => row.targets[t]?.tps.median;
  const where = r.cores
    ? ` Proxies on cores of their own: pgbench and Postgres on CPU ${r.cores.loadCpus.join(',')}, repobase and PgBouncer on CPU ${r.cores.proxyCpus.join(',')}.`
    : '';
  return [
    `Many clients, few backends: ${r.clients} pgbench clients; repobase as shipped (pooling by transaction) and PgBouncer in transaction mode with ${POOL_SIZE * 2} backends per user, direct with one backend per client.${where}`,
    '',
    `| scenario | repobase TPS | PgBouncer TPS | direct TPS | backends repobase / PgBouncer / direct | proxy CPU µs per transaction repobase / PgBouncer | repobase / PgBouncer | repobase / direct |`,
    '|---|---|---|---|---|---|---|---|',
    ...r.results.map(
      (row) =>
        `| ${row.scenario} | ${fmt(tps(row, CLIENTS_REPOBASE) ?? NaN)} | ${fmt(tps(row, BOUNCER) ?? NaN)} | ${fmt(tps(row, DIRECT) ?? NaN)} | ${[CLIENTS_REPOBASE, BOUNCER, DIRECT].map((t) => fmt(row.targets[t]?.backends?.max ?? NaN)).join(' / ')} | ${[CLIENTS_REPOBASE, BOUNCER].map((t) => fmt(row.targets[t]?.cpuUs?.median ?? NaN, 1)).join(' / ')} | ${fmt(ratio(tps(row, CLIENTS_REPOBASE), tps(row, BOUNCER)), 2)} | ${fmt(ratio(tps(row, CLIENTS_REPOBASE), tps(row, DIRECT)), 2)} |`,
    ),
    ...(r.refNotRun ? ['', `${r.refNotRun}.`] : []),
  ];
}

/** The goals: at least PgBouncer's TPS in both, and at least direct's for TPC-B; `prefix` names the run (`own cores: `). */
export function clientsGoals(r: ClientsResult | undefined, prefix = ''): { name: string; target: string; ratio: number; passed: boolean }[] {
  const row = (name: string) => r?.results.find((x) => x.scenario === name)?.targets;
  const goal = (name: string, scenario: string, against: string) => {
    const t = row(scenario);
    const value = ratio(t?.[CLIENTS_REPOBASE]?.tps.median, t?.[against]?.tps.median);
    return { name: prefix + name, target: '≥ 1.0', ratio: value, passed: value >= 1 };
  };
  return [
    goal('200 clients: TPC-B vs PgBouncer (transaction mode)', 'pgbench TPC-B -M simple', BOUNCER),
    goal('200 clients: -S vs PgBouncer (transaction mode)', 'pgbench -S -M simple', BOUNCER),
    goal('200 clients: TPC-B vs direct (a backend per client)', 'pgbench TPC-B -M simple', DIRECT),
  ];
}
