/**
 * pgbench through each target, interleaved (A B C A B C …) so that the machine's noise falls on
 * every target alike; the ratios of medians are what the report states.
 *
 * Twice: with every process free to run on every core (the proxies share them with pgbench and
 * Postgres), and with the proxies on cores of their own (`taskset`), as when the proxy runs on
 * other machines than the database — the deployment beyond one machine.
 */
import { REPO, conninfo, repobaseOn, type BenchEnv, type Conn, type FreshService, type RefEnv } from '../env.js';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import { cpuMicrosOf, cpuSplit, freePort, pinTree, run, start, waitFor } from '../lib/proc.js';
import { summarize, type Summary } from '../lib/stats.js';

export interface WireScenario {
  name: string;
  args: string[];
  tls: boolean;
  /** It writes: each run starts from the same tables (see `resetTables`). */
  writes?: boolean;
}

export const WIRE_SCENARIOS: WireScenario[] = [
  { name: 'pgbench -S -M prepared', args: ['-S', '-M', 'prepared'], tls: false },
  { name: 'pgbench -S -M simple', args: ['-S', '-M', 'simple'], tls: false },
  { name: 'pgbench -S -M extended', args: ['-S', '-M', 'extended'], tls: false },
  { name: 'pgbench TPC-B -M simple', args: ['-M', 'simple'], tls: false, writes: true },
  { name: 'pgbench -S -M prepared, TLS', args: ['-S', '-M', 'prepared'], tls: true },
];

export interface TargetResult {
  tps: Summary;
  latencyMs: Summary;
  /** CPU µs per transaction of the target's own processes (a proxy's), where the bench started them. */
  cpuUs?: Summary;
  /** The most backends of the bench user it held at once, where counted (the `clients` scenario). */
  backends?: Summary;
}

export interface WireResult {
  scenario: string;
  targets: Record<string, TargetResult>;
}

export interface WireOptions {
  rounds: number;
  seconds: number;
  clients: number;
}

/** The uncounted pgbench run before each measured one, for runs this long or longer (not the smoke run's). */
const WARMUP_SECONDS = 2;
const WARMUP_AFTER_SECONDS = 5;

/** pgbench once; on `cpus` only when given. */
export async function pgbench(conn: Conn, scenario: WireScenario, opts: WireOptions, cpus?: readonly number[]): Promise<{ tps: number; latency: number; transactions: number }> {
  const args = [...scenario.args, '-c', String(opts.clients), '-j', '2', '-T', String(opts.seconds), '-n', conninfo(conn, scenario.tls ? 'require' : 'disable')];
  const r = cpus ? await run('taskset', ['-c', cpus.join(','), 'pgbench', ...args]) : await run('pgbench', args);
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(r.stdout)?.[1]);
  const latency = Number(/latency average = ([\d.]+) ms/.exec(r.stdout)?.[1]);
  const transactions = Number(/number of transactions actually processed: (\d+)/.exec(r.stdout)?.[1]);
  const failed = Number(/number of failed transactions: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  if (r.code !== 0 || !Number.isFinite(tps) || failed > 0) {
    throw new Error(`pgbench ${scenario.name} failed (exit ${r.code}, ${failed} failed):\n${r.stderr.slice(-2000)}`);
  }
  return { tps, latency, transactions };
}

/**
 * What pgbench does before a run unless told `-n`: vacuum the two small tables every transaction
 * updates and empty the history. Done here, on the direct connection, so that no target's run
 * inherits the dead rows of the runs before it (the targets run in the same order every round:
 * without this, the later ones ran on ever more bloated tables until autovacuum came by).
 */
export async function resetTables(direct: Conn): Promise<void> {
  const r = await run('psql', [conninfo(direct), '-v', 'ON_ERROR_STOP=1', '-qc', 'VACUUM pgbench_branches, pgbench_tellers', '-c', 'TRUNCATE pgbench_history']);
  if (r.code !== 0) throw new Error(`resetting the pgbench tables failed: ${r.stderr}`);
}

export async function initPgbench(env: BenchEnv, scale: number): Promise<void> {
  const r = await run('pgbench', ['-i', '-s', String(scale), '-q', conninfo(env.repobase)]);
  if (r.code !== 0) throw new Error(`pgbench -i failed: ${r.stderr}`);
}

/** Name of the reference target: a bare Node relay (bench/bare-relay.ts), the ceiling of any proxy in Node. */
export const BARE_RELAY = 'bare Node relay';
/** repobase as shipped but in session mode (a backend per client). */
export const SESSION_MODE = 'repobase session mode';
/**
 * repobase as shipped, logged in with a scoped key: write access to the bench repo only, so its
 * sessions run as the key's own role and every statement is judged with the key's scope too.
 */
export const SCOPED_KEY = 'repobase scoped key';

/** A write key of the bench user for the bench repo only, made through the REST API with its full key. */
async function scopedKey(env: BenchEnv): Promise<string> {
  const res = await fetch(`${env.repobase.httpUrl}/api/v1beta/keys/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.repobase.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', repos: [REPO], access: 'write' }),
  });
  const made = (await res.json()) as { key?: string; access?: string };
  if (res.status !== 201 || made.access !== 'write' || !made.key) throw new Error(`a scoped key for ${REPO}: HTTP ${res.status} ${JSON.stringify(made)}`);
  return made.key;
}

/** The wire scenarios through every target; with `ref`, that build's repobase (as shipped and as one process) too. */
export async function runWire(env: BenchEnv, opts: WireOptions, log: (s: string) => void, ref?: RefEnv): Promise<WireResult[]> {
  const relayPort = await freePort();
  const relay = start('bare-relay', process.execPath, [join(packageRoot, 'dist', 'bench', 'bare-relay.js'), String(relayPort), String(env.direct.port)], process.env);
  try {
    await waitFor('bare relay', async () => (await run('psql', [conninfo({ ...env.direct, port: relayPort }), '-Atc', 'SELECT 1'])).stdout.trim() === '1');
    const scoped: Conn = { ...env.repobase, password: await scopedKey(env) };
    return await runAll(env, opts, log, { ...env.direct, port: relayPort }, relay.child.pid, scoped, ref);
  } finally {
    await relay.stop();
  }
}

function runAll(env: BenchEnv, opts: WireOptions, log: (s: string) => void, bareRelay: Conn, bareRelayPid: number | undefined, scoped: Conn, ref: RefEnv | undefined): Promise<WireResult[]> {
  const targets: WireTarget[] = [
    target('direct', env.direct, env),
    ...bouncer(env),
    freshTarget('repobase', env.repobase, env, env.repobase.workers),
    freshTarget(SCOPED_KEY, scoped, env, env.repobase.workers),
    ...(ref ? [freshTarget(`repobase${ref.suffix}`, ref.env.repobase, ref.env, ref.env.repobase.workers)] : []),
    freshTarget('repobase 1 process', env.single, env, 1),
    ...(ref ? [freshTarget(`repobase 1 process${ref.suffix}`, ref.env.single, ref.env, 1)] : []),
    target(SESSION_MODE, env.session, env, env.session.pid),
    target(BARE_RELAY, bareRelay, env, bareRelayPid),
  ];
  // TLS: the bare relay would only pass the direct connection's TLS through.
  return interleave(WIRE_SCENARIOS, (scenario) => (scenario.tls ? targets.filter((t) => t.name !== 'direct' && t.name !== BARE_RELAY) : targets), opts, log);
}

/** A target of `env`'s world: writing scenarios reset the tables of that world's Postgres; `pid`: its process, whose CPU is counted. */
function target(name: string, conn: Conn, env: Pick<BenchEnv, 'direct'>, pid?: number): WireTarget {
  return { name, conn, direct: env.direct, pid };
}

/**
 * repobase of `env`'s world as `conn` logs in to it, on a process of its own with `workers` for
 * each measured run (see WireTarget.fresh).
 */
function freshTarget(name: string, conn: Conn, env: BenchEnv, workers: number): WireTarget {
  return { ...target(name, conn, env), fresh: () => env.startService(workers) };
}

function bouncer(env: BenchEnv): WireTarget[] {
  return 'unavailable' in env.pgbouncer ? [] : [target('pgbouncer', env.pgbouncer, env, env.pgbouncer.pid)];
}

/** One target of a wire scenario. */
export interface WireTarget {
  name: string;
  conn: Conn;
  /** The direct connection to the Postgres it reaches, where its tables are reset before a writing run. */
  direct: Conn;
  /** The proxy's process (and its workers), whose CPU per transaction is reported. */
  pid?: number | undefined;
  /**
   * repobase: a process started for each measured run (and stopped after it), whose wire port
   * `conn` is pointed at. One process of a build can cost up to 8 % more than another for its
   * whole life; a process per run samples that spread instead of keeping one draw for the run.
   */
  fresh?: () => Promise<FreshService>;
}

/** One pgbench run's figures. */
export type PgbenchRun = Awaited<ReturnType<typeof pgbench>>;

/** Runs a target's measured run (`work`) and counts the most backends it held meanwhile. */
export type BackendsWatch = (t: WireTarget, work: () => Promise<PgbenchRun>) => Promise<{ run: PgbenchRun; backends: number }>;

/**
 * Each scenario through its targets in interleaved rounds, in reverse order every other round
 * (A B C, C B A, A B C…) so that a drift of the machine's load over the run falls on every target
 * alike; writing scenarios reset their tables before every run. `cpus`: pgbench runs there;
 * `watch`: each measured run's backends are counted too (TargetResult.backends).
 */
export async function interleave(
  scenarios: WireScenario[],
  targetsOf: (s: WireScenario) => WireTarget[],
  opts: WireOptions,
  log: (s: string) => void,
  cpus?: readonly number[],
  watch?: BackendsWatch,
): Promise<WireResult[]> {
  const results: WireResult[] = [];
  const where = `${cpus ? ' (proxies on cores of their own)' : ''}${watch ? `, ${opts.clients} clients` : ''}`;
  for (const scenario of scenarios) {
    const use = targetsOf(scenario);
    const samples = new Map(use.map((t) => [t.name, { tps: [] as number[], lat: [] as number[], cpu: [] as number[], backends: [] as number[] }]));
    for (let round = 0; round < opts.rounds; round++) {
      for (const each of round % 2 ? [...use].reverse() : use) {
        const service = await each.fresh?.();
        const t = service === undefined ? each : { ...each, conn: { ...each.conn, port: service.wirePort }, pid: service.pid };
        try {
          // Each target's backends may have closed while the others ran (repobase's after
          // `upstreamIdleMs`, 30 s): a short run first, not counted, so that no target is measured
          // while its pool fills (session mode opens a backend per client at once, pooling by
          // transaction as the load needs them). Its figures are not read: with many clients its
          // connections may outlast it, and then pgbench reports no TPS.
          if (opts.seconds >= WARMUP_AFTER_SECONDS) await pgbench(t.conn, scenario, { ...opts, seconds: WARMUP_SECONDS }, cpus).catch(() => undefined);
          if (scenario.writes) await resetTables(t.direct);
          const cpuBefore = t.pid === undefined ? 0 : cpuMicrosOf(t.pid);
          const measure = () => pgbench(t.conn, scenario, opts, cpus);
          const { run: r, backends } = watch ? await watch(t, measure) : { run: await measure(), backends: undefined };
          const sample = samples.get(t.name)!;
          sample.tps.push(r.tps);
          sample.lat.push(r.latency);
          if (t.pid !== undefined) sample.cpu.push((cpuMicrosOf(t.pid) - cpuBefore) / Math.max(1, r.transactions));
          if (backends !== undefined) sample.backends.push(backends);
          log(`${scenario.name}${where}, round ${round + 1} ${t.name}: ${r.tps.toFixed(0)} tps${backends !== undefined ? `, ${backends} backends` : ''}`);
        } finally {
          await service?.stop();
        }
      }
    }
    results.push({
      scenario: scenario.name,
      targets: Object.fromEntries(
        [...samples].map(([n, s]) => [
          n,
          { tps: summarize(s.tps), latencyMs: summarize(s.lat), ...(s.cpu.length > 0 ? { cpuUs: summarize(s.cpu) } : {}), ...(s.backends.length > 0 ? { backends: summarize(s.backends) } : {}) },
        ]),
      ),
    });
  }
  return results;
}

export interface OwnCoresResult {
  /** CPUs of pgbench and Postgres, and of the proxies. */
  loadCpus: number[];
  proxyCpus: number[];
  /** Processes of the repobase measured (see repobaseOn). */
  repobaseProcesses: number;
  results: WireResult[];
}

/**
 * The wire scenarios (TLS aside) with pgbench and Postgres on the first half of the cores and the
 * proxy on the rest: each proxy spends only its own cores, as a proxy on machines of its own
 * would (repobase as `repobaseOn` picks it). `scenarios` limits the run to the first
 * few (a smoke run). A reason string when it cannot run.
 */
export async function runWireOwnCores(env: BenchEnv, opts: WireOptions & { scenarios?: number }, log: (s: string) => void, ref?: RefEnv): Promise<OwnCoresResult | string> {
  const split = await cpuSplit();
  if (typeof split === 'string') return split;
  const { all, loadCpus, proxyCpus } = split;
  const { service: repobase, processes } = repobaseOn(env, proxyCpus.length);
  const theirs = ref ? repobaseOn(ref.env, proxyCpus.length).service : undefined;
  const proxies = [repobase.pid, ...(theirs ? [theirs.pid] : []), ...('unavailable' in env.pgbouncer ? [] : [env.pgbouncer.pid])];
  const postgres = [env.postgresPid, ...(ref ? [ref.env.postgresPid] : [])];
  try {
    for (const pid of postgres) await pinTree(pid, loadCpus);
    for (const pid of proxies) await pinTree(pid, proxyCpus);
    const targets = [target('direct', env.direct, env), ...bouncer(env), target('repobase', repobase, env, repobase.pid), ...(ref && theirs ? [target(`repobase${ref.suffix}`, theirs, ref.env, theirs.pid)] : [])];
    const results = await interleave(
      WIRE_SCENARIOS.filter((s) => !s.tls).slice(0, opts.scenarios),
      () => targets,
      opts,
      log,
      loadCpus,
    );
    return { loadCpus, proxyCpus, repobaseProcesses: processes, results };
  } finally {
    for (const pid of [...postgres, ...proxies]) await pinTree(pid, all);
  }
}
