/**
 * REST: `POST /api/v1beta/query/` with a one-row indexed select, keep-alive, 32 connections,
 * against the bare fastify+pg route (bench/bare-rest.ts) with the same query on the same role —
 * each with as many processes as repobase ships with here, and each as a single process.
 *
 * Each run also reports the CPU spent per request by the service's processes, by Postgres and by
 * the load generator (autocannon runs in this process): on a machine whose cores they share, the
 * ratio of two routes follows the ratio of their total CPU per request.
 *
 * Then once more with the routes on cores of their own (`taskset`, as in the wire scenarios):
 * autocannon and Postgres on the first half of the CPUs, each route on the rest.
 */
import autocannon from 'autocannon';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import { POOL_SIZE, REPO, repobaseOn, type BenchEnv, type RefEnv } from '../env.js';
import { cpuMicrosOf, cpuSplit, freePort, pinProcess, pinTree, start, waitFor } from '../lib/proc.js';
import { summarize, type Summary } from '../lib/stats.js';

/** CPU µs per request, by whom. */
export interface RestCpu {
  service: Summary;
  postgres: Summary;
  loadGenerator: Summary;
}

/** One target's runs: medians and spreads. */
export interface RestTargetResult {
  rps: Summary;
  p50: Summary;
  p99: Summary;
  errors: number;
  cpu: RestCpu;
}

export interface RestResult {
  targets: Record<string, RestTargetResult>;
  /**
   * The same targets again at one fixed rate below saturation (`AT_RATE_SHARE` of the slowest
   * target's median): there every target serves the same requests per second, so its CPU per
   * request is the work a request costs, without the preemption and wake-ups of two saturated
   * cores, which move with the machine's load from one run to the next.
   */
  atRate?: { rate: number; targets: Record<string, RestTargetResult> };
}

/**
 * The fixed rate's share of the slowest target's saturated median. At a half, a run
 * whose targets each went slower in their fixed-rate rounds than in their saturated ones (the
 * machine's load moved) saw several reach only 1,620–1,770 of the 1,800 req/s asked, saturated
 * again, so their CPU per request was not a request's work alone.
 */
export const AT_RATE_SHARE = 0.3;

/**
 * Rounds at the fixed rate for each saturated one. There a request's CPU moves by a quarter from
 * one 10-second run to the next on this machine (one build against an equal one, eight pairs:
 * 0.79–1.28 per pair, median 0.98), so three pairs can put a median 5–20 % off where eight do
 * not; a round at the fixed rate is short beside the saturated ones' warm-up, so it gets more.
 */
export const AT_RATE_ROUNDS = 2;

/** The fixed rate for targets whose saturated medians are `rps`: a round hundred, at least 100. */
export function fixedRate(rps: readonly number[]): number {
  const slowest = Math.min(...rps.filter((r) => Number.isFinite(r) && r > 0));
  return Number.isFinite(slowest) ? Math.max(100, Math.floor((slowest * AT_RATE_SHARE) / 100) * 100) : 100;
}

const QUERY = 'SELECT abalance FROM pgbench_accounts WHERE aid = 4242';

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  cpu: { service: number; postgres: number; loadGenerator: number };
}

/** `seconds` of 32 keep-alive connections, as fast as the target answers or at `rate` requests per second in all. */
async function load(url: string, headers: Record<string, string>, body: string, seconds: number, pids: { service: number; postgres: number }, rate?: number): Promise<Load> {
  const before = { service: cpuMicrosOf(pids.service), postgres: cpuMicrosOf(pids.postgres), own: process.cpuUsage() };
  const result = await autocannon({ url, method: 'POST', connections: 32, duration: seconds, headers: { 'content-type': 'application/json', ...headers }, body, ...(rate ? { overallRate: rate } : {}) });
  const own = process.cpuUsage(before.own);
  const n = Math.max(1, result.requests.total);
  const cpu = {
    service: (cpuMicrosOf(pids.service) - before.service) / n,
    postgres: (cpuMicrosOf(pids.postgres) - before.postgres) / n,
    loadGenerator: (own.user + own.system) / n,
  };
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, cpu };
}

export interface RestOptions {
  rounds: number;
  seconds: number;
  /** Unrecorded load on every target before the rounds. */
  warmupSeconds: number;
}

/** A route's process tree, and where to send its requests. */
export interface Route {
  url: string;
  /** The route's process tree (its CPU is the service's). */
  pid: number;
}

/** A route started for one round, stopped after it. */
export type FreshRoute = Route & { stop(): Promise<void> };

export interface Target {
  name: string;
  headers: Record<string, string>;
  body: string;
  /**
   * The route: one kept for the whole run, or a function that starts a fresh one for each round
   * (warmed, measured, stopped). One process of a build can cost 15–45 % more CPU per request
   * than another for its whole life (FreshService in env.ts): a route kept for the run is one
   * draw of that, the same in every round, and rounds cannot average it out.
   */
  route: Route | (() => Promise<FreshRoute>);
  /** The postmaster of the Postgres it queries. */
  postgresPid: number;
}

export const BARE_BODY = JSON.stringify({ query_string: QUERY });

/**
 * A statement the policy finds setting-free (policy/setting-free.ts): a session it ran on needs no
 * reset before its next request. The same text for repobase and the bare route.
 */
export const SETTING_FREE_BODY = JSON.stringify({ query_string: 'SELECT 1 AS one' });

/** The bare fastify+pg route with `processes` processes, up and answering. */
export async function startBare(env: Pick<BenchEnv, 'direct'>, processes: number): Promise<FreshRoute> {
  const { host, port: pgPort, user, password, dbname } = env.direct;
  const url = `postgresql://${user}:${encodeURIComponent(password)}@${host}:${pgPort}/${dbname}`;
  const port = await freePort();
  const bare = start('bare-rest', process.execPath, [join(packageRoot, 'dist', 'bench', 'bare-rest.js'), String(port), url, String(POOL_SIZE), String(processes)], process.env);
  const route = `http://127.0.0.1:${port}/query`;
  try {
    await waitFor('bare fastify route', async () => (await fetch(route, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BARE_BODY })).ok);
  } catch (err: unknown) {
    await bare.stop();
    throw err;
  }
  return { url: route, pid: bare.child.pid!, stop: bare.stop };
}

/** The REST one-row select of the bench, as repobase is sent it. */
export const REPOBASE_BODY = JSON.stringify({ query_string: `SELECT abalance FROM "${REPO}".pgbench_accounts WHERE aid = 4242` });

/** `route` once `pin` has placed it; stopped if that fails. */
async function placed(route: FreshRoute, pin?: (pid: number) => Promise<void>): Promise<FreshRoute> {
  try {
    await pin?.(route.pid);
    return route;
  } catch (err: unknown) {
    await route.stop();
    throw err;
  }
}

/** The path of repobase's query endpoint. */
const QUERY_PATH = '/api/v1beta/query/';

/** A fresh repobase of `env`'s world with `workers` processes for each round; `pin` places it. */
function repobaseTarget(env: BenchEnv, name: string, workers: number, pin?: (pid: number) => Promise<void>): Target {
  const route = async (): Promise<FreshRoute> => {
    const service = await env.startService(workers);
    return placed({ url: `${service.httpUrl}${QUERY_PATH}`, pid: service.pid, stop: service.stop }, pin);
  };
  return { name, headers: { authorization: `Bearer ${env.repobase.key}` }, body: REPOBASE_BODY, route, postgresPid: env.postgresPid };
}

/** A fresh bare fastify+pg route on `env`'s Postgres with `processes` processes for each round; `pin` places it. */
function bareTarget(env: BenchEnv, name: string, processes: number, pin?: (pid: number) => Promise<void>): Target {
  const route = async (): Promise<FreshRoute> => placed(await startBare(env, processes), pin);
  return { name, headers: {}, body: BARE_BODY, route, postgresPid: env.postgresPid };
}

/**
 * The targets in interleaved rounds, in reverse order every other round (A B C, C B A…: a drift
 * of the machine's load falls on every target alike); medians and spreads per target.
 */
export async function measure(targets: Target[], opts: RestOptions, log: (s: string) => void, label = '', rate?: number): Promise<RestResult['targets']> {
  const samples = new Map(targets.map((t) => [t.name, { runs: [] as Load[], errors: 0 }]));
  // A process's first seconds run unoptimized: each is warmed once, unrecorded, before its first run.
  const warmed = new Set<number>();
  const runOnce = async (t: Target): Promise<Load> => {
    const fresh = typeof t.route === 'function' ? await t.route() : undefined;
    const route = fresh ?? (t.route as Route);
    const pids = { service: route.pid, postgres: t.postgresPid };
    try {
      if (opts.warmupSeconds > 0 && (fresh || !warmed.has(route.pid))) await load(route.url, t.headers, t.body, opts.warmupSeconds, pids);
      warmed.add(route.pid);
      return await load(route.url, t.headers, t.body, opts.seconds, pids, rate);
    } finally {
      await fresh?.stop();
    }
  };
  for (let round = 0; round < opts.rounds; round++) {
    for (const t of round % 2 ? [...targets].reverse() : targets) {
      const r = await runOnce(t);
      const s = samples.get(t.name)!;
      s.runs.push(r);
      s.errors += r.errors;
      const cpu = `CPU µs/request: service ${r.cpu.service.toFixed(0)}, Postgres ${r.cpu.postgres.toFixed(0)}, load generator ${r.cpu.loadGenerator.toFixed(0)}`;
      log(`REST${label} round ${round + 1} ${t.name}: ${r.rps.toFixed(0)} req/s${r.errors ? `, ${r.errors} errors` : ''}; ${cpu}`);
    }
  }
  const of = (runs: Load[], pick: (r: Load) => number) => summarize(runs.map(pick));
  return Object.fromEntries(
    [...samples].map(([n, { runs, errors }]) => [
      n,
      {
        rps: of(runs, (r) => r.rps),
        p50: of(runs, (r) => r.p50),
        p99: of(runs, (r) => r.p99),
        errors,
        cpu: { service: of(runs, (r) => r.cpu.service), postgres: of(runs, (r) => r.cpu.postgres), loadGenerator: of(runs, (r) => r.cpu.loadGenerator) },
      },
    ]),
  );
}

/**
 * The REST scenario; with `ref`, that build's repobase (as shipped and as one process) too. Every
 * round runs on fresh processes of every target (see Target.route).
 */
export async function runRest(env: BenchEnv, opts: RestOptions, log: (s: string) => void, ref?: RefEnv): Promise<RestResult> {
  const shipped = env.repobase.workers;
  const targets = [
    bareTarget(env, 'bare fastify+pg', shipped),
    repobaseTarget(env, 'repobase', shipped),
    ...(ref ? [repobaseTarget(ref.env, `repobase${ref.suffix}`, ref.env.repobase.workers)] : []),
    bareTarget(env, 'bare fastify+pg 1 process', 1),
    repobaseTarget(env, 'repobase 1 process', 1),
    ...(ref ? [repobaseTarget(ref.env, `repobase 1 process${ref.suffix}`, 1)] : []),
  ];
  const saturated = await measure(targets, opts, log);
  const rate = fixedRate(Object.values(saturated).map((t) => t.rps.median));
  const atRate = await measure(targets, { ...opts, rounds: opts.rounds * AT_RATE_ROUNDS }, log, ` at ${rate} req/s`, rate);
  return { targets: saturated, atRate: { rate, targets: atRate } };
}

export interface RestOwnCoresResult extends RestResult {
  loadCpus: number[];
  proxyCpus: number[];
  /** Processes of each route: as many as repobase has there (see repobaseOn). */
  processes: number;
}

/**
 * The bare route and repobase on cores of their own, autocannon (this process) and Postgres on
 * the others: what each route costs when it does not share the database's CPU. A reason string
 * when it cannot run.
 */
export async function runRestOwnCores(env: BenchEnv, opts: RestOptions, log: (s: string) => void, ref?: RefEnv): Promise<RestOwnCoresResult | string> {
  const split = await cpuSplit();
  if (typeof split === 'string') return split;
  const { all, loadCpus, proxyCpus } = split;
  const { processes } = repobaseOn(env, proxyCpus.length);
  const postgres = [env.postgresPid, ...(ref ? [ref.env.postgresPid] : [])];
  const pin = (pid: number) => pinTree(pid, proxyCpus);
  try {
    for (const pid of postgres) await pinTree(pid, loadCpus);
    await pinProcess(process.pid, loadCpus); // autocannon; not the tree: the services are this process's children
    const targets: Target[] = [
      bareTarget(env, 'bare fastify+pg', processes, pin),
      repobaseTarget(env, 'repobase', processes, pin),
      ...(ref ? [repobaseTarget(ref.env, `repobase${ref.suffix}`, repobaseOn(ref.env, proxyCpus.length).processes, pin)] : []),
    ];
    return { loadCpus, proxyCpus, processes, targets: await measure(targets, opts, log, ' (routes on cores of their own)') };
  } finally {
    for (const pid of postgres) await pinTree(pid, all);
    await pinProcess(process.pid, all);
  }
}
