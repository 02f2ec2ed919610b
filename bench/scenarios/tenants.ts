/**
 * Tenants share fairly: repobase as shipped on its embedded Postgres (a service of its own, the
 * only thing running), a *quiet* user (4 wire clients doing primary-key lookups, 2 REST clients
 * doing one-row selects, each 50 a second on a schedule) measured alone, then during a *noisy*
 * user's flood (300 wire clients looping CPU-heavy statements, 50 holding `pg_sleep(2)`
 * transactions, 32 REST requests at once; the sizes scaled to the machine's cores, the issue's
 * for 2), then once more after a pause while noisy also parks 150 connections idle inside open
 * transactions: quiet comes back on new connections and must be served at once, without 53300.
 * Reported: quiet's p50/p99 on both front ends in each phase and the ratios, noisy's throughput
 * (CPU-heavy statements per second), the service's event-loop lag p99 during the flood, and every
 * error by SQLSTATE. With `--against`, the other build runs the same, after this one, on a service
 * of its own: noisy's throughput there is the "today" of the goal.
 *
 * `many` (scenario `tenants-many`): 100 users of 100 wire clients each (scaled down by `--quick`),
 * short transactions with up to 15 s of think time, for a minute: every user served, no error, and the longest
 * a transaction took.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import { BIN } from '../env.js';
import { signUpWithKey } from '../lib/accounts.js';
import { freePort, start, waitFor } from '../lib/proc.js';
import { errorCount, type ErrorTally } from '../lib/stats.js';
import type { GroupResult, LoadGroup, TenantLoadConfig, TenantLoadResult } from '../lib/tenant-load.js';

const LOAD = join(packageRoot, 'dist', 'bench', 'lib', 'tenant-load.js');
/** The noisy user's CPU-heavy statement (tens of ms of one core). */
const HEAVY = 'SELECT sum(g::bigint * g) FROM generate_series(1, 300000) g';
const ACCOUNTS = 100_000;

interface Service {
  httpUrl: string;
  wirePort: number;
  dir: string;
  bin: string;
  env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

/** repobase as shipped on an embedded Postgres of its own (the REST rate limit lifted: it measures latency, not the limit). */
async function startService(bin: string, log: (s: string) => void): Promise<Service> {
  const dir = await mkdtemp(join(tmpdir(), 'repobase-tenants-'));
  await chmod(dir, 0o755);
  const [httpPort, wirePort, pgPort] = [await freePort(), await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    REPOBASE_DATA_DIR: join(dir, 'data'),
    REPOBASE_HTTP_PORT: String(httpPort),
    REPOBASE_PG_PORT: String(wirePort),
    REPOBASE_EMBEDDED_PG_PORT: String(pgPort),
    REPOBASE_LOG_LEVEL: 'warn',
    REPOBASE_RATE_LIMIT_MAX: '100000000',
  };
  delete env.REPOBASE_UPSTREAM_URL;
  log(`starting repobase (${bin}) on an embedded Postgres`);
  // Each in a session of its own, as on machines of their own: the service's scheduling group is
  // not the load generators'.
  const service = start('repobase', bin, ['serve'], env, { detached: true });
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  try {
    await waitFor('repobase', async () => service.output().includes('repobase is running') && (await fetch(`${httpUrl}/healthz`)).ok, 120_000);
  } catch (err: unknown) {
    await service.stop();
    throw new Error(`${(err as Error).message}: ${service.output().slice(-2000)}`);
  }
  return { httpUrl, wirePort, dir, bin, env, stop: async () => (await service.stop(), await rm(dir, { recursive: true, force: true })) };
}

async function sql(svc: Service, key: string, query: string): Promise<void> {
  const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ query_string: query }) });
  if (res.status !== 200) throw new Error(`${query}: HTTP ${res.status} ${await res.text()}`);
}

/** A user signed up with a repo `app`; `accounts` rows in its table `accounts` when asked. */
async function tenant(svc: Service, name: string, accounts = 0): Promise<{ user: string; key: string }> {
  const key = await signUpWithKey(svc.httpUrl, name);
  await sql(svc, key, `CREATE SCHEMA "${name}/app"`);
  if (accounts > 0) {
    await sql(svc, key, `CREATE TABLE "${name}/app".accounts AS SELECT g AS aid, 0 AS abalance, repeat(' ', 84) AS filler FROM generate_series(1, ${accounts}) g`);
    await sql(svc, key, `ALTER TABLE "${name}/app".accounts ADD PRIMARY KEY (aid)`);
  }
  return { user: name, key };
}

/** Runs a load process to its end; resolves with its result. `onReady` runs once its clients are logged in. */
async function load(svc: Service, config: Omit<TenantLoadConfig, 'host' | 'wirePort' | 'httpUrl' | 'database' | 'resultFile'>, onReady?: () => void): Promise<TenantLoadResult> {
  const resultFile = join(svc.dir, `load-${randomBytes(4).toString('hex')}.json`);
  const full: TenantLoadConfig = { ...config, host: '127.0.0.1', wirePort: svc.wirePort, httpUrl: svc.httpUrl, database: 'repobase', resultFile };
  const proc = start('tenant-load', process.execPath, [LOAD], { ...process.env, TENANT_LOAD_CONFIG: JSON.stringify(full) }, { detached: true });
  try {
    await waitFor('the load clients', async () => proc.output().includes('ready') || proc.child.exitCode !== null, 600_000);
    onReady?.();
    await waitFor('the load', async () => proc.output().includes('done') || proc.child.exitCode !== null, (config.warmupSeconds + config.seconds + 120) * 1000);
    return JSON.parse(await readFile(resultFile, 'utf8')) as TenantLoadResult;
  } catch (err: unknown) {
    throw new Error(`${(err as Error).message}: ${proc.output().slice(-2000)}`);
  } finally {
    await proc.stop();
  }
}

/**
 * The service's event-loop lag p99 since the previous scrape (prom-client resets it at each), in
 * ms. Node samples the loop with a timer (every 100 ms, as the service sets it) and records the
 * whole time between two of its callbacks: an idle loop shows 100 ms. What is late beyond the
 * timer's own interval is the p99 less the minimum (the interval, as near as a loop gets to it).
 */
async function lagP99(svc: Service): Promise<number> {
  const text = await (await fetch(`${svc.httpUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^repobase_nodejs_eventloop_lag_${name}_seconds\\s+([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN);
  return (value('p99') - value('min')) * 1000;
}

export interface QuietPhase {
  wire: GroupResult;
  rest: GroupResult;
}

export interface TenantsBuild {
  build: string;
  alone: QuietPhase;
  flood: QuietPhase;
  /** Quiet back after a pause, noisy flooding and parking connections in open transactions. */
  parked: QuietPhase;
  /** noisy's CPU-heavy statements per second during the flood (wire and REST). */
  noisyPerSecond: number;
  noisyErrors: ErrorTally;
  lagP99Ms: number;
}

export interface TenantsResult {
  sizes: { noisyWire: number; noisySleepers: number; noisyRest: number; parked: number; seconds: number; pauseSeconds: number };
  builds: TenantsBuild[];
}

/**
 * Each of quiet's clients asks 50 times a second, on a schedule (an app's lookups, not a closed
 * loop: a closed loop takes every core it is given and is no quiet user — alone it took 1.6 of
 * the two). A lookup that waited for the client's previous one counts from when it was due.
 */
const QUIET_PER_CLIENT_PER_SECOND = 50;
const quietGroups = (q: { user: string; key: string }): LoadGroup[] => [
  { name: 'quiet wire', front: 'wire', user: q.user, key: q.key, clients: 4, unit: [`SELECT abalance FROM "${q.user}/app".accounts WHERE aid = $N`], keys: ACCOUNTS, perClientPerSecond: QUIET_PER_CLIENT_PER_SECOND },
  { name: 'quiet rest', front: 'rest', user: q.user, key: q.key, clients: 2, unit: [`SELECT abalance FROM "${q.user}/app".accounts WHERE aid = $N`], keys: ACCOUNTS, perClientPerSecond: QUIET_PER_CLIENT_PER_SECOND },
];

function quietOf(r: TenantLoadResult): QuietPhase {
  return { wire: r.groups.find((g) => g.name === 'quiet wire')!, rest: r.groups.find((g) => g.name === 'quiet rest')! };
}

async function runBuild(bin: string, build: string, opts: { seconds: number; pauseSeconds: number; scale: number }, log: (s: string) => void): Promise<TenantsBuild & { sizes: TenantsResult['sizes'] }> {
  const svc = await startService(bin, log);
  try {
    const suffix = randomBytes(2).toString('hex');
    const quiet = await tenant(svc, `quiet_${suffix}`, ACCOUNTS);
    const noisy = await tenant(svc, `noisy_${suffix}`);
    const n = (x: number) => Math.max(1, Math.round(x * opts.scale));
    const sizes = { noisyWire: n(300), noisySleepers: n(50), noisyRest: n(32), parked: n(150), seconds: opts.seconds, pauseSeconds: opts.pauseSeconds };
    const flood: LoadGroup[] = [
      { name: 'noisy heavy', front: 'wire', user: noisy.user, key: noisy.key, clients: sizes.noisyWire, unit: [HEAVY] },
      { name: 'noisy sleepers', front: 'wire', user: noisy.user, key: noisy.key, clients: sizes.noisySleepers, unit: ['BEGIN', 'SELECT pg_sleep(2)', 'COMMIT'] },
      { name: 'noisy rest', front: 'rest', user: noisy.user, key: noisy.key, clients: sizes.noisyRest, unit: [HEAVY] },
    ];
    log(`${build}: quiet alone`);
    const alone = quietOf(await load(svc, { warmupSeconds: 2, seconds: opts.seconds, groups: quietGroups(quiet) }));
    log(`${build}: quiet during the flood`);
    let during: QuietPhase | undefined;
    let lag = NaN;
    const noisyRun = load(svc, { warmupSeconds: 3, seconds: opts.seconds + 2, groups: flood }, () => {
      void (async () => {
        await new Promise((r) => setTimeout(r, 3_000));
        await lagP99(svc);
        during = quietOf(await load(svc, { warmupSeconds: 1, seconds: opts.seconds, groups: quietGroups(quiet) }));
        lag = await lagP99(svc);
      })();
    });
    const noisyResult = await noisyRun;
    await waitFor('quiet during the flood', async () => during !== undefined, 120_000);
    log(`${build}: quiet back after a ${opts.pauseSeconds} s pause, noisy parking ${sizes.parked} connections in open transactions`);
    let parked: QuietPhase | undefined;
    const parking: LoadGroup = { name: 'noisy parked', front: 'wire', user: noisy.user, key: noisy.key, clients: sizes.parked, unit: ['BEGIN', 'SELECT 1'], park: true };
    await load(svc, { warmupSeconds: opts.pauseSeconds, seconds: opts.seconds + 2, groups: [...flood, parking] }, () => {
      void (async () => {
        await new Promise((r) => setTimeout(r, opts.pauseSeconds * 1000));
        parked = quietOf(await load(svc, { warmupSeconds: 0, seconds: opts.seconds, groups: quietGroups(quiet) }));
      })();
    });
    await waitFor('quiet after the pause', async () => parked !== undefined, 120_000);
    const heavy = noisyResult.groups.filter((g) => g.name !== 'noisy sleepers');
    const noisyErrors: ErrorTally = {};
    for (const g of noisyResult.groups) for (const [code, e] of Object.entries(g.errors)) noisyErrors[code] = { count: (noisyErrors[code]?.count ?? 0) + e.count, message: e.message };
    return { build, sizes, alone, flood: during!, parked: parked!, noisyPerSecond: heavy.reduce((s, g) => s + g.perSecond, 0), noisyErrors, lagP99Ms: lag };
  } finally {
    await svc.stop();
  }
}

/** The quiet/noisy scenario on this build and, with `ref`, the other (one after the other, each on a service of its own). */
export async function runTenants(opts: { quick: boolean }, log: (s: string) => void, ref?: { bin: string; suffix: string }): Promise<TenantsResult> {
  const settings = { seconds: opts.quick ? 3 : 20, pauseSeconds: opts.quick ? 2 : 35, scale: opts.quick ? 0.2 : availableParallelism() / 2 };
  const builds: TenantsBuild[] = [];
  let sizes: TenantsResult['sizes'] | undefined;
  for (const [bin, name] of [[BIN, 'repobase'], ...(ref ? [[ref.bin, `repobase${ref.suffix}`]] : [])] as [string, string][]) {
    const { sizes: s, ...b } = await runBuild(bin, name, settings, log);
    sizes ??= s;
    builds.push(b);
  }
  return { sizes: sizes!, builds };
}

const ratio = (a: number, b: number) => (b ? a / b : NaN);
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const errs = (t: ErrorTally) => (errorCount(t) === 0 ? '0' : Object.entries(t).map(([c, e]) => `${c} ×${e.count} (${e.message})`).join('; '));

/** The report's table. */
export function tenantsLines(r: TenantsResult): string[] {
  const s = r.sizes;
  const lines = [
    `Tenants: quiet (4 wire clients, primary-key lookups; 2 REST clients, one-row selects; each ${QUIET_PER_CLIENT_PER_SECOND} a second on a schedule, a late one timed from when due) alone, during noisy's flood (${s.noisyWire} wire clients looping a CPU-heavy statement, ${s.noisySleepers} in pg_sleep(2) transactions, ${s.noisyRest} REST requests at once), and back after a ${s.pauseSeconds} s pause while noisy also parks ${s.parked} connections in open transactions; ${s.seconds} s each, repobase as shipped on its embedded Postgres.`,
    '',
    '| build | front end | quiet p50 / p99 ms alone | during the flood | ratio of p99 | back after the pause | quiet errors | noisy statements/s | noisy errors | event-loop lag p99 ms |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const b of r.builds) {
    for (const front of ['wire', 'rest'] as const) {
      const [a, f, p] = [b.alone[front], b.flood[front], b.parked[front]];
      const quietErrors = errorCount(a.errors) + errorCount(f.errors) + errorCount(p.errors);
      lines.push(
        `| ${b.build} | ${front} | ${ms(a.latencyMs.p50)} / ${ms(a.latencyMs.p99)} | ${ms(f.latencyMs.p50)} / ${ms(f.latencyMs.p99)} | ${ratio(f.latencyMs.p99, a.latencyMs.p99).toFixed(1)} | ${ms(p.latencyMs.p50)} / ${ms(p.latencyMs.p99)} | ${quietErrors === 0 ? '0' : errs({ ...a.errors, ...f.errors, ...p.errors })} | ${front === 'wire' ? b.noisyPerSecond.toFixed(0) : ''} | ${front === 'wire' ? errs(b.noisyErrors) : ''} | ${front === 'wire' ? ms(b.lagP99Ms) : ''} |`,
      );
    }
  }
  return lines;
}

/** The goals: quiet's p99 during the flood ≤ 5× alone on both front ends, no error for quiet back after the pause, noisy's throughput ≥ 0.8 of the other build's. */
export function tenantsGoals(r: TenantsResult | undefined): { name: string; target: string; ratio: number; passed: boolean }[] {
  const mine = r?.builds[0];
  const theirs = r?.builds[1];
  const p99 = (front: 'wire' | 'rest') => (mine ? ratio(mine.flood[front].latencyMs.p99, mine.alone[front].latencyMs.p99) : NaN);
  const parkedErrors = mine ? errorCount(mine.parked.wire.errors) + errorCount(mine.parked.rest.errors) : NaN;
  const noisy = mine && theirs ? ratio(mine.noisyPerSecond, theirs.noisyPerSecond) : NaN;
  return [
    { name: 'tenants: quiet wire p99 during the flood / alone', target: '≤ 5', ratio: p99('wire'), passed: p99('wire') <= 5 },
    { name: 'tenants: quiet REST p99 during the flood / alone', target: '≤ 5', ratio: p99('rest'), passed: p99('rest') <= 5 },
    { name: 'tenants: quiet errors back after the pause (noisy parked)', target: '= 0', ratio: parkedErrors, passed: parkedErrors === 0 },
    { name: 'tenants: event-loop lag p99 during the flood, ms', target: '< 50', ratio: mine?.lagP99Ms ?? NaN, passed: (mine?.lagP99Ms ?? Infinity) < 50 },
    { name: 'tenants: noisy throughput vs the --against build', target: '≥ 0.8', ratio: noisy, passed: noisy >= 0.8 },
  ];
}

export interface ManyResult {
  users: number;
  clientsPerUser: number;
  seconds: number;
  transactionsPerSecond: number;
  /** Transactions of the user served least and most. */
  perUser: { min: number; max: number };
  usersServed: number;
  longestMs: number;
  p99Ms: number;
  errors: ErrorTally;
}

/** 100 users × 100 wire clients (10 × 10 with --quick), short transactions with think time, for a minute. */
export async function runManyTenants(opts: { quick: boolean }, log: (s: string) => void): Promise<ManyResult> {
  const [users, clients, seconds] = opts.quick ? [10, 10, 5] : [100, 100, 60];
  const svc = await startService(BIN, log);
  try {
    log(`${users} users with a table each`);
    const suffix = randomBytes(2).toString('hex');
    const tenants = await Promise.all(
      Array.from({ length: users }, async (_, i) => {
        const t = await tenant(svc, `t${i}_${suffix}`);
        await sql(svc, t.key, `CREATE TABLE "${t.user}/app".t AS SELECT g AS id, 0 AS v FROM generate_series(1, 100) g`);
        await sql(svc, t.key, `ALTER TABLE "${t.user}/app".t ADD PRIMARY KEY (id)`);
        return t;
      }),
    );
    const groups: LoadGroup[] = tenants.map((t) => ({
      name: t.user,
      front: 'wire',
      user: t.user,
      key: t.key,
      clients,
      unit: ['BEGIN', `UPDATE "${t.user}/app".t SET v = v + 1 WHERE id = $N`, `SELECT v FROM "${t.user}/app".t WHERE id = $N`, 'COMMIT'],
      keys: 100,
      // Up to 15 s (7.5 s on average) between transactions: about 1,300 transactions a second
      // asked for, within what the machine serves, so that waits say how fairly turns are given
      // rather than how far past its capacity the machine is pushed.
      thinkMs: 15_000,
    }));
    log(`${users * clients} clients logging in`);
    const r = await load(svc, { warmupSeconds: 5, seconds, groups });
    const errors: ErrorTally = {};
    for (const g of r.groups) for (const [code, e] of Object.entries(g.errors)) errors[code] = { count: (errors[code]?.count ?? 0) + e.count, message: e.message };
    const counts = r.groups.map((g) => g.units);
    return {
      users,
      clientsPerUser: clients,
      seconds: r.seconds,
      transactionsPerSecond: counts.reduce((a, b) => a + b, 0) / r.seconds,
      perUser: { min: Math.min(...counts), max: Math.max(...counts) },
      usersServed: counts.filter((c) => c > 0).length,
      longestMs: Math.max(...r.groups.map((g) => g.latencyMs.max)),
      p99Ms: Math.max(...r.groups.map((g) => g.latencyMs.p99)),
      errors,
    };
  } finally {
    await svc.stop();
  }
}

export function manyLines(m: ManyResult): string[] {
  return [
    `Many tenants: ${m.users} users × ${m.clientsPerUser} wire clients, transactions of an UPDATE and a SELECT with up to 15 s of think time, ${m.seconds.toFixed(0)} s: ${m.transactionsPerSecond.toFixed(0)} transactions/s; users served ${m.usersServed} of ${m.users} (per user ${m.perUser.min}–${m.perUser.max} transactions); slowest transaction ${ms(m.longestMs)} ms (worst user's p99 ${ms(m.p99Ms)} ms); errors ${errs(m.errors)}.`,
  ];
}

export function manyGoals(m: ManyResult | undefined): { name: string; target: string; ratio: number; passed: boolean }[] {
  return [
    { name: 'many tenants: users not served', target: '= 0', ratio: m ? m.users - m.usersServed : NaN, passed: m ? m.usersServed === m.users : false },
    { name: 'many tenants: errors', target: '= 0', ratio: m ? errorCount(m.errors) : NaN, passed: m ? errorCount(m.errors) === 0 : false },
    { name: 'many tenants: slowest transaction, s', target: '< 5', ratio: m ? m.longestMs / 1000 : NaN, passed: m ? m.longestMs < 5_000 : false },
  ];
}

