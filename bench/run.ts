/**
 * `npm run bench`: every front end side by side with its anchors in one run, as ratios.
 * `npm run bench -- --quick` is a smoke run (under a minute), not a measurement: it fails only when
 * something breaks. `npm run bench -- --against <git-ref>` also runs that build of repobase, in
 * the same rounds, and reports this build against it (see bench/lib/against.ts, bench/lib/ab.ts).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../src/shared/package-root.js';
import { startBenchEnv, type BenchEnv, type RefEnv } from './env.js';
import { abGoals, abLines, abRows } from './lib/ab.js';
import { buildRef, type RefBuild } from './lib/against.js';
import { busyLines, busyWhileIdle, type BusyWhileIdle } from './lib/idle.js';
import { errorCount, fmt } from './lib/stats.js';
import { catalogLines, runCatalog, type CatalogResult } from './scenarios/catalog.js';
import { runConnections, type ConnectionsResult } from './scenarios/connections.js';
import { AT_RATE_SHARE, runRest, runRestOwnCores, type RestOwnCoresResult, type RestResult } from './scenarios/rest.js';
import { restAsyncLines, runRestAsync, type RestAsyncResult } from './scenarios/rest-async.js';
import { runSoak, SOAK_MAX_RSS_CHANGE_PCT, type SoakResult } from './scenarios/soak.js';
import { BARE_RELAY, SESSION_MODE, initPgbench, runWire, runWireOwnCores, type OwnCoresResult, type WireResult } from './scenarios/wire.js';
import { runUpload, uploadLines, type UploadResult } from './scenarios/upload.js';
import { runWeb, type WebResult } from './scenarios/web.js';
import { runCitus, type CitusResult } from './scenarios/citus.js';
import { clientsGoals, clientsLines, runClients, type ClientsResult } from './scenarios/clients.js';
import { manyGoals, manyLines, runManyTenants, runTenants, tenantsGoals, tenantsLines, type ManyResult, type TenantsResult } from './scenarios/tenants.js';

interface Targets {
  name: string;
  target: string;
  ratio: number;
  passed: boolean;
}

const quick = process.argv.includes('--quick');
/** The value after `--name` on the command line, if given. */
function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}
const settings = quick
  ? { rounds: 1, seconds: 1, restSeconds: 1, restWarmupSeconds: 0, scale: 1, connections: 500, uploadMb: 10, logins: 3, gridRows: 100_000, gridRounds: 5 }
  : { rounds: 3, seconds: 10, restSeconds: 8, restWarmupSeconds: 5, scale: 10, connections: 10_000, uploadMb: 100, logins: 20, gridRows: 10_000_000, gridRounds: 20 };
/** `--rounds 5`: more interleaved rounds (an A/B's ratios get a steadier median). */
if (option('--rounds') !== undefined) {
  settings.rounds = Number(option('--rounds'));
  if (!(Number.isInteger(settings.rounds) && settings.rounds > 0)) throw new Error('--rounds must be a positive integer');
}
/**
 * `--workers N`: the "as shipped" repobase runs N worker processes instead of its default (the
 * comparison of N processes with one, whatever the default is on this machine).
 */
const workersOption = option('--workers');
const workers = workersOption === undefined ? undefined : Number(workersOption);
if (workers !== undefined && !(Number.isInteger(workers) && workers >= 0)) throw new Error('--workers must be a whole number (0: the default)');
/** `--against <git-ref>`: that build too, in the same rounds; `--keep-build` keeps its worktree for the next run. */
const against = option('--against');
const keepBuild = process.argv.includes('--keep-build');
const log = (s: string) => process.stderr.write(`· ${s}\n`);
/** `--only wire,rest` runs just those scenarios (for working on one); the report marks the rest "not run". */
const only = option('--only') !== undefined ? new Set(option('--only')!.split(',')) : undefined;
const wanted = (name: string) => !only || only.has(name);
/** `--soak-seconds 10` (or BENCH_SOAK_SECONDS) shortens the soak, which runs 60 s (5 s with --quick). */
const soakSeconds = Number(option('--soak-seconds') ?? process.env.BENCH_SOAK_SECONDS ?? (quick ? 5 : 60));
if (!(soakSeconds > 0)) throw new Error('--soak-seconds must be a positive number');

function ratio(a: number | undefined, b: number | undefined): number {
  return a !== undefined && b ? a / b : NaN;
}

async function policyBench(): Promise<{ cachedUs: number; uncachedUs: number; statements: number } | string> {
  try {
    const mod = (await import('./policy.js')) as { runPolicyBench?: () => Promise<{ cachedUs: number; uncachedUs: number; statements: number }> };
    return mod.runPolicyBench ? await mod.runPolicyBench() : 'bench/policy.ts exports no runPolicyBench';
  } catch (err: unknown) {
    return `policy bench unavailable: ${(err as Error).message}`;
  }
}

const SINGLE = 'repobase 1 process';

function wireTable(wire: WireResult[], workers: number): string[] {
  const lines = [
    `| scenario | direct TPS | PgBouncer TPS | repobase TPS (${workers === 1 ? '1 process' : `${workers} workers`}) | repobase 1 process TPS | repobase session mode TPS | bare Node relay TPS | repobase latency ms | repobase / direct | repobase / PgBouncer | 1 process / PgBouncer | repobase / session mode | bare Node relay / PgBouncer | spread (max−min)/median |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const w of wire) {
    const t = w.targets;
    const spread = Object.entries(t).map(([n, r]) => `${n} ${fmt(r.tps.spreadPct)}%`).join(', ');
    const tps = (name: string) => t[name]?.tps.median;
    lines.push(
      `| ${w.scenario} | ${fmt(tps('direct') ?? NaN)} | ${fmt(tps('pgbouncer') ?? NaN)} | ${fmt(tps('repobase') ?? NaN)} | ${fmt(tps(SINGLE) ?? NaN)} | ${fmt(tps(SESSION_MODE) ?? NaN)} | ${fmt(tps(BARE_RELAY) ?? NaN)} | ${fmt(t.repobase?.latencyMs.median ?? NaN, 3)} | ${fmt(ratio(tps('repobase'), tps('direct')), 2)} | ${fmt(ratio(tps('repobase'), tps('pgbouncer')), 2)} | ${fmt(ratio(tps(SINGLE), tps('pgbouncer')), 2)} | ${fmt(ratio(tps('repobase'), tps(SESSION_MODE)), 2)} | ${fmt(ratio(tps(BARE_RELAY), tps('pgbouncer')), 2)} | ${spread} |`,
    );
  }
  return [...lines, '', ...cpuTable(wire)];
}

/** The proxies' CPU µs per transaction (their processes, from /proc), for the targets the bench started. */
function cpuTable(wire: WireResult[]): string[] {
  const names = [...new Set(wire.flatMap((w) => Object.entries(w.targets).filter(([, r]) => r.cpuUs).map(([n]) => n)))];
  if (names.length === 0) return [];
  return [
    `| scenario | ${names.map((n) => `${n} CPU µs/tx`).join(' | ')} |`,
    `|---|${names.map(() => '---|').join('')}`,
    ...wire.map((w) => `| ${w.scenario} | ${names.map((n) => fmt(w.targets[n]?.cpuUs?.median ?? NaN, 1)).join(' | ')} |`),
  ];
}

/** repobase on a Citus coordinator against the coordinator directly (see bench/scenarios/citus.ts). */
function citusTable(c: CitusResult): string[] {
  const direct = 'Citus coordinator direct';
  const via = 'repobase on Citus';
  const bare = 'bare fastify+pg on the coordinator';
  return [
    `Citus: a coordinator and ${c.workers} workers (PostgreSQL 15), the pgbench repo on ${c.repoNode}.`,
    '',
    '| scenario | coordinator direct TPS | repobase TPS | repobase / direct |',
    '|---|---|---|---|',
    ...c.wire.map((w) => `| ${w.scenario} | ${fmt(w.targets[direct]?.tps.median ?? NaN)} | ${fmt(w.targets[via]?.tps.median ?? NaN)} | ${fmt(ratio(w.targets[via]?.tps.median, w.targets[direct]?.tps.median), 2)} |`),
    '',
    ...(
      [
        ['REST one-row select', c.rest],
        ['REST SELECT 1 (setting-free: no reset between requests)', c.restSettingFree],
      ] as const
    ).map(
      ([label, r]) =>
        `${label} on Citus: repobase ${fmt(r[via]?.rps.median ?? NaN)} req/s, bare fastify+pg ${fmt(r[bare]?.rps.median ?? NaN)} req/s (ratio ${fmt(ratio(r[via]?.rps.median, r[bare]?.rps.median), 2)}); coordinator CPU µs per request ${fmt(r[via]?.cpu.postgres.median ?? NaN)} against ${fmt(r[bare]?.cpu.postgres.median ?? NaN)}; errors ${(r[via]?.errors ?? 0) + (r[bare]?.errors ?? 0)}.`,
    ),
    ...(c.refNotRun ? [`${c.refNotRun}.`] : []),
  ];
}

/** The wire scenarios with the proxies on cores of their own (see runWireOwnCores). */
function ownCoresTable(own: OwnCoresResult): string[] {
  const lines = [
    `Proxies on cores of their own: pgbench and Postgres on CPU ${own.loadCpus.join(',')}, PgBouncer and repobase (${own.repobaseProcesses} process${own.repobaseProcesses > 1 ? 'es' : ''}) on CPU ${own.proxyCpus.join(',')}, as when the proxy runs on machines apart from the database.`,
    '',
    '| scenario | direct TPS | PgBouncer TPS | repobase TPS | repobase latency ms | repobase / direct | repobase / PgBouncer | spread (max−min)/median |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const w of own.results) {
    const t = w.targets;
    const tps = (name: string) => t[name]?.tps.median;
    const spread = Object.entries(t).map(([n, r]) => `${n} ${fmt(r.tps.spreadPct)}%`).join(', ');
    lines.push(
      `| ${w.scenario} | ${fmt(tps('direct') ?? NaN)} | ${fmt(tps('pgbouncer') ?? NaN)} | ${fmt(tps('repobase') ?? NaN)} | ${fmt(t.repobase?.latencyMs.median ?? NaN, 3)} | ${fmt(ratio(tps('repobase'), tps('direct')), 2)} | ${fmt(ratio(tps('repobase'), tps('pgbouncer')), 2)} | ${spread} |`,
    );
  }
  return [...lines, '', ...cpuTable(own.results)];
}

function restTable(targets: RestResult['targets'], title = 'REST (32 connections)'): string[] {
  return [
    `| ${title} | req/s | p50 ms | p99 ms | errors | CPU µs per request: service / Postgres / load generator |`,
    '|---|---|---|---|---|---|',
    ...Object.entries(targets).map(([n, r]) => `| ${n} | ${fmt(r.rps.median)} | ${fmt(r.p50.median, 1)} | ${fmt(r.p99.median, 1)} | ${r.errors} | ${fmt(r.cpu.service.median)} / ${fmt(r.cpu.postgres.median)} / ${fmt(r.cpu.loadGenerator.median)} |`),
  ];
}

/** The soak's report: both front ends' throughput and latency, memory, and the upstream after. */
function soakLines(s: SoakResult): string[] {
  const errors = (tally: SoakResult['rest']['errors']) => (errorCount(tally) === 0 ? '0' : Object.entries(tally).map(([code, e]) => `${code} ×${fmt(e.count)} (${e.message})`).join('; '));
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  return [
    `Soak, ${s.seconds} s on ${s.loadAverage.cores} cores (load average ${load(s.loadAverage.before)} before, ${load(s.loadAverage.after)} after):`,
    '',
    '| front end | clients | mix | throughput | p50 ms | p99 ms | errors by SQLSTATE |',
    '|---|---|---|---|---|---|---|',
    `| wire | ${s.wire.clients} (${s.wire.users} users, ≤ ${s.wire.maxClientsPerUser} each) | TPC-B-like, simple protocol | ${fmt(s.wire.tps)} tps | ${fmt(s.wire.latencyMs.p50, 1)} | ${fmt(s.wire.latencyMs.p99, 1)} | ${errors(s.wire.errors)} |`,
    `| REST | ${s.rest.clients} keep-alive | ${Object.entries(s.rest.mix).map(([n, share]) => `${n} ${Math.round(share * 100)} %`).join(', ')} | ${fmt(s.rest.rps)} req/s | ${fmt(s.rest.latencyMs.p50, 1)} | ${fmt(s.rest.latencyMs.p99, 1)} | ${errors(s.rest.errors)} |`,
    '',
    `Wire transactions per ${s.seconds >= 20 ? 5 : 1} s: ${s.wire.transactionsPerWindow.map((n) => fmt(n)).join(', ')}.`,
    `RSS of repobase (all processes): ${fmt(s.rss.warmupMb)} MB after warm-up (${s.rss.warmupSeconds} s), ${fmt(s.rss.midMb)} MB halfway, ${fmt(s.rss.endMb)} MB at the end (${fmt(s.rss.changePct, 1)} % from warm-up, ${fmt(s.rss.secondHalfChangePct, 1)} % over the second half), ${fmt(s.rss.afterMb)} MB once idle.`,
    `Upstream client sessions after the load: ${Object.entries(s.upstreamAfter.byState).map(([state, n]) => `${n} ${state}`).join(', ') || 'none'}; ${s.upstreamAfter.secondsToIdle === null ? `still busy after ${s.upstreamAfter.waitedSeconds} s` : `none busy after ${fmt(s.upstreamAfter.secondsToIdle, 1)} s`}.`,
    ...(s.failures.length ? ['', ...s.failures.map((f) => `**soak FAILED**: ${f}`)] : []),
  ];
}

/** Scenarios whose targets an `--against` run also runs on the other build. */
const COMPARED = ['wire', 'wire-own-cores', 'clients', 'rest', 'rest-own-cores', 'upload', 'citus'];

async function main(): Promise<void> {
  // Built first: a ref that does not build stops the run before anything started.
  const refBuild: RefBuild | undefined = against ? await buildRef(against, { keep: keepBuild }, log) : undefined;
  try {
    await measureAll(refBuild);
  } finally {
    await refBuild?.remove();
  }
}

async function measureAll(refBuild: RefBuild | undefined): Promise<void> {
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  // An interrupted run still stops what it started (Postgres, repobase, PgBouncer, the ref's worktree).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping`);
      void stopAll()
        .then(() => refBuild?.remove())
        .finally(() => process.exit(130));
    });
  }
  let env: BenchEnv;
  let ref: RefEnv | undefined;
  const loadBefore = loadavg();
  try {
    env = await startBenchEnv(log, { workers });
    stops.push(() => env.stop());
    if (refBuild && COMPARED.some((s) => s !== 'citus' && wanted(s))) {
      const theirs = await startBenchEnv(log, { bin: refBuild.bin, pgbouncer: false, label: refBuild.ref, workers });
      stops.push(() => theirs.stop());
      ref = { env: theirs, suffix: refBuild.suffix, poolsByTransaction: refBuild.poolsByTransaction };
    }
  } catch (err: unknown) {
    await stopAll();
    throw err;
  }
  const results: {
    wire?: WireResult[];
    wireOwnCores?: OwnCoresResult | string;
    rest?: RestResult;
    restAsync?: RestAsyncResult | string;
    restOwnCores?: RestOwnCoresResult | string;
    policy?: Awaited<ReturnType<typeof policyBench>>;
    catalog?: CatalogResult | string;
    upload?: UploadResult | string;
    connections?: ConnectionsResult | string;
    web?: WebResult | string;
    citus?: CitusResult | string;
    soak?: SoakResult | string;
    clients?: ClientsResult | string;
    clientsOwnCores?: ClientsResult | string;
    tenants?: TenantsResult | string;
    tenantsMany?: ManyResult | string;
  } = {};
  // Every proxy of the run, watched with no load before each scenario (lib/idle.ts).
  const proxies = new Map<string, number>();
  for (const [world, suffix] of [[env, ''], ...(ref ? [[ref.env, ref.suffix] as const] : [])] as const) {
    proxies.set(`repobase${suffix}`, world.repobase.pid).set(`${SINGLE}${suffix}`, world.single.pid).set(`${SESSION_MODE}${suffix}`, world.session.pid);
  }
  if ('pid' in env.pgbouncer) proxies.set('pgbouncer', env.pgbouncer.pid);
  const busy: BusyWhileIdle[] = [];
  /** Whether `scenario` runs; if it does, the proxies are checked idle first. */
  const starting = async (scenario: string): Promise<boolean> => {
    if (!wanted(scenario)) return false;
    const found = await busyWhileIdle(scenario, proxies);
    for (const b of found) log(`idle check before ${scenario}: ${b.target} used ${Math.round(b.cores * 100)} % of a core with no load`);
    busy.push(...found);
    return true;
  };
  try {
    log(`pgbench -i -s ${settings.scale} through repobase`);
    await initPgbench(env, settings.scale);
    if (ref) {
      log(`pgbench -i -s ${settings.scale} through repobase${ref.suffix}`);
      await initPgbench(ref.env, settings.scale);
    }
    if (await starting('clients')) results.clients = await runClients(env, { rounds: settings.rounds, seconds: settings.seconds, clients: 200 }, log, ref).catch((err: unknown) => `clients failed: ${(err as Error).message}`);
    if (await starting('clients-own-cores')) {
      results.clientsOwnCores = await runClients(env, { rounds: settings.rounds, seconds: settings.seconds, clients: 200, ownCores: true, scenarios: quick ? 1 : undefined }, log).catch((err: unknown) => `clients on cores of their own failed: ${(err as Error).message}`);
    }
    if (await starting('wire')) results.wire = await runWire(env, { rounds: settings.rounds, seconds: settings.seconds, clients: 8 }, log, ref);
    if (await starting('wire-own-cores')) {
      results.wireOwnCores = await runWireOwnCores(env, { rounds: settings.rounds, seconds: settings.seconds, clients: 8, scenarios: quick ? 1 : undefined }, log, ref);
    }
    if (await starting('rest')) {
      results.rest = await runRest(env, { rounds: settings.rounds, seconds: settings.restSeconds, warmupSeconds: settings.restWarmupSeconds }, log, ref);
      results.restAsync = await runRestAsync(env, { rounds: settings.rounds, queries: quick ? 20 : 200, rows: quick ? 100_000 : 1_000_000 }, log).catch((err: unknown) => `REST async failed: ${(err as Error).message}`);
    }
    if (await starting('rest-own-cores')) results.restOwnCores = await runRestOwnCores(env, { rounds: settings.rounds, seconds: settings.restSeconds, warmupSeconds: settings.restWarmupSeconds }, log, ref);
    if (await starting('policy')) results.policy = await policyBench();
    if (await starting('catalog')) {
      results.catalog = await runCatalog(env, { repos: quick ? 500 : 10_000, rounds: quick ? 3 : 20 }, log).catch((err: unknown) => `catalog failed: ${(err as Error).message}`);
    }
    if (await starting('soak')) {
      results.soak = await runSoak(env, { seconds: soakSeconds, wireClients: 150, restClients: 50, scale: settings.scale, judgeRss: !quick }, log).catch((err: unknown) => `soak failed: ${(err as Error).message}`);
    }
    if (await starting('upload')) {
      results.upload = await runUpload(env, { megabytes: settings.uploadMb, rounds: settings.rounds }, log, ref).catch((err: unknown) => `upload failed: ${(err as Error).message}`);
    }
    if (await starting('connections')) {
      results.connections = await runConnections(env, settings.connections, log).catch((err: unknown) => `connections failed: ${(err as Error).message}`);
    }
    if (await starting('web')) results.web = await runWeb(env, { logins: settings.logins, gridRows: settings.gridRows, gridRounds: settings.gridRounds }, log).catch((err: unknown) => `web failed: ${(err as Error).message}`);
  } finally {
    await stopAll();
  }
  // A cluster of its own, after the single-cluster world is gone (the machine is the same).
  if (wanted('citus')) {
    results.citus = await runCitus(
      { wire: { rounds: settings.rounds, seconds: settings.seconds, clients: 8 }, rest: { rounds: settings.rounds, seconds: settings.restSeconds, warmupSeconds: settings.restWarmupSeconds }, scale: settings.scale },
      log,
      refBuild && { bin: refBuild.bin, suffix: refBuild.suffix },
    ).catch((err: unknown) => `citus failed: ${(err as Error).message}`);
  }
  // Services of their own on embedded clusters, as shipped, with nothing else running.
  if (wanted('tenants')) results.tenants = await runTenants({ quick }, log, refBuild && { bin: refBuild.bin, suffix: refBuild.suffix }).catch((err: unknown) => `tenants failed: ${(err as Error).message}`);
  if (wanted('tenants-many')) results.tenantsMany = await runManyTenants({ quick }, log).catch((err: unknown) => `tenants-many failed: ${(err as Error).message}`);

  const own = typeof results.wireOwnCores === 'object' ? results.wireOwnCores : undefined;
  const ab = refBuild
    ? abRows(
        { wire: results.wire, wireOwnCores: own?.results, rest: results.rest?.targets, restAtRate: results.rest?.atRate?.targets, restOwnCores: typeof results.restOwnCores === 'object' ? results.restOwnCores.targets : undefined, citus: typeof results.citus === 'object' ? results.citus : undefined, clients: typeof results.clients === 'object' ? results.clients : undefined },
        refBuild.suffix,
      )
    : [];
  // `from` is always passed: a scenario that did not run (undefined) must read "not measured",
  // never fall back to another scenario's figures.
  const w = (name: string, from: WireResult[] | undefined) => from?.find((x) => x.scenario === name)?.targets;
  const vsBouncer = (name: string, target: string, from: WireResult[] | undefined) => ratio(w(name, from)?.[target]?.tps.median, w(name, from)?.pgbouncer?.tps.median);
  const rest = results.rest?.targets;
  const restOwn = typeof results.restOwnCores === 'object' ? results.restOwnCores : undefined;
  const restRatio = (target: string, floor: string, from: RestResult['targets'] | undefined) => ratio(from?.[target]?.rps.median, from?.[floor]?.rps.median);
  const upload = typeof results.upload === 'object' ? results.upload : undefined;
  const conns = typeof results.connections === 'object' ? results.connections : undefined;
  const web = typeof results.web === 'object' ? results.web : undefined;
  const citus = typeof results.citus === 'object' ? results.citus : undefined;
  const soak = typeof results.soak === 'object' ? results.soak : undefined;
  const wireGoals: [string, string, number][] = [
    ['-S -M prepared', 'pgbench -S -M prepared', 1],
    ['TPC-B -M simple', 'pgbench TPC-B -M simple', 1],
    ['-S -M simple', 'pgbench -S -M simple', 0.9],
    ['-S -M extended', 'pgbench -S -M extended', 0.9],
  ];
  const goal = (name: string, min: number, measured: number): Targets => ({ name, target: `≥ ${Number.isInteger(min * 10) ? min.toFixed(1) : String(min)}`, ratio: measured, passed: measured >= min });
  const targets: Targets[] = [
    ...wireGoals.map(([label, scenario, min]) => goal(`wire ${label} vs PgBouncer`, min, vsBouncer(scenario, 'repobase', results.wire))),
    // Pooling by transaction costs the 8 clients (each with a backend to spare) next to nothing.
    ...wireGoals.map(([label, scenario]) => goal(`wire ${label}: as shipped vs session mode`, 0.95, ratio(w(scenario, results.wire)?.['repobase']?.tps.median, w(scenario, results.wire)?.[SESSION_MODE]?.tps.median))),
    ...clientsGoals(typeof results.clients === 'object' ? results.clients : undefined),
    ...clientsGoals(typeof results.clientsOwnCores === 'object' ? results.clientsOwnCores : undefined, 'own cores: '),
    goal('REST one-row select vs bare fastify+pg', 0.8, restRatio('repobase', 'bare fastify+pg', rest)),
    { name: 'upload with inference vs psql \\copy', target: '≥ 0.5', ratio: upload?.ratio ?? NaN, passed: (upload?.ratio ?? 0) >= 0.5 },
    // 500 connections of a smoke run weigh less than the collector's swings (a run read −32 KB each): shown, not judged.
    {
      name: `idle connections: KB RSS each${quick ? ' (--quick: not judged)' : ''}`,
      target: '< 20',
      ratio: conns && !quick ? conns.bytesPerConnection / 1024 : NaN,
      passed: conns ? conns.bytesPerConnection < 20 * 1024 : false,
    },
    { name: 'web: first page JavaScript, KB gzipped', target: '≤ 150', ratio: web ? web.firstPageJsGzip / 1024 : NaN, passed: web ? web.firstPageJsGzip <= 150 * 1024 : false },
    ...(['keysetFirstPage', 'keysetDeepPage'] as const).map((k) => {
      const r = web ? web.grid[k].median / web.grid.plainFirstPage.median : NaN;
      return { name: `web: grid ${k === 'keysetFirstPage' ? 'first page' : 'page 100 deep'} vs plain SELECT … LIMIT 100 (POST /query/)`, target: '≤ 1.2', ratio: r, passed: r <= 1.2 };
    }),
    { name: 'soak: errors (wire and REST)', target: '= 0', ratio: soak ? errorCount(soak.wire.errors) + errorCount(soak.rest.errors) : NaN, passed: soak ? errorCount(soak.wire.errors) + errorCount(soak.rest.errors) === 0 : false },
    // A smoke run's few seconds of soak say nothing about memory: shown, not judged.
    {
      name: `soak: RSS change from warm-up to the end, %${quick ? ' (--quick: not judged)' : ''}`,
      target: `within ±${SOAK_MAX_RSS_CHANGE_PCT}`,
      ratio: soak && !quick ? soak.rss.changePct : NaN,
      passed: soak ? Math.abs(soak.rss.changePct) <= SOAK_MAX_RSS_CHANGE_PCT : false,
    },
    { name: 'soak: seconds until no upstream session is busy', target: `≤ ${soak?.upstreamAfter.waitedSeconds ?? 10}`, ratio: soak ? soak.upstreamAfter.secondsToIdle ?? Infinity : NaN, passed: soak ? soak.upstreamAfter.secondsToIdle !== null : false },
    // The same goals for one process: what a single event loop reaches (reported, not the product).
    ...wireGoals.map(([label, scenario, min]) => goal(`1 process: wire ${label} vs PgBouncer`, min, vsBouncer(scenario, SINGLE, results.wire))),
    goal('1 process: REST one-row select vs bare fastify+pg 1 process', 0.8, restRatio(SINGLE, 'bare fastify+pg 1 process', rest)),
    // And with the proxies on cores of their own: what the proxy costs when it does not share the database's CPU.
    ...wireGoals.map(([label, scenario, min]) => goal(`own cores: wire ${label} vs PgBouncer`, min, vsBouncer(scenario, 'repobase', own?.results))),
    goal('own cores: REST one-row select vs bare fastify+pg', 0.8, restRatio('repobase', 'bare fastify+pg', restOwn?.targets)),
    ...tenantsGoals(typeof results.tenants === 'object' ? results.tenants : undefined),
    ...manyGoals(typeof results.tenantsMany === 'object' ? results.tenantsMany : undefined),
    ...(refBuild ? abGoals(ab, refBuild.ref) : []),
  ];

  const bouncerVersion = 'unavailable' in env.pgbouncer ? `PgBouncer unavailable: ${env.pgbouncer.unavailable}` : env.pgbouncer.version;
  const date = new Date().toISOString();
  const load = { before: loadBefore, after: loadavg() };
  const machine = { cores: cpus().length, repobaseWorkers: env.repobase.workers, cpu: cpus()[0]?.model ?? '', memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version, postgres: env.pgVersion, pgbouncer: bouncerVersion, quick, loadAverage: load };
  const n = env.repobase.workers;
  const shippedAs = `${n === 1 ? 'one process' : `${n} worker processes`} (${workers === undefined ? '`workers` 0, its default' : `\`--workers ${workers}\``})`;
  const loadText = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
  const lines = [
    `## repobase benchmark${quick ? ' (--quick: smoke run, not a measurement)' : ''}`,
    '',
    `${date.slice(0, 10)}, ${machine.cores} cores (${machine.cpu}), ${machine.memoryGb} GiB, load average ${loadText(load.before)} at the start, ${loadText(load.after)} at the end; Node ${machine.node}, Postgres ${machine.postgres}, ${machine.pgbouncer}; ${settings.rounds} interleaved rounds, medians; pgbench scale ${settings.scale}, 8 clients, ${settings.seconds} s per run. repobase as shipped runs ${shippedAs} here; "1 process" is the same service with \`workers\` 1.`,
    '',
    ...busyLines(busy),
    ...(results.wire ? wireTable(results.wire, env.repobase.workers) : ['Wire on shared cores: not run']),
    '',
    ...(own ? ownCoresTable(own) : [`Proxies on cores of their own: ${results.wireOwnCores ?? 'not run'}`]),
    '',
    ...(typeof results.clients === 'object' ? clientsLines(results.clients) : [`Many clients: ${results.clients ?? 'not run'}`]),
    '',
    ...(typeof results.clientsOwnCores === 'object' ? clientsLines(results.clientsOwnCores) : [`Many clients, proxies on cores of their own: ${results.clientsOwnCores ?? 'not run'}`]),
    '',
    ...(rest ? restTable(rest) : ['REST on shared cores: not run']),
    '',
    ...(results.rest?.atRate
      ? [
          `The same targets at a fixed ${fmt(results.rest.atRate.rate)} req/s (${Math.round(AT_RATE_SHARE * 100)} % of the slowest one's median above), where each serves the same load: the CPU per request is a request's work, without the contention of saturated cores.`,
          '',
          ...restTable(results.rest.atRate.targets, `REST at ${fmt(results.rest.atRate.rate)} req/s`),
          '',
        ]
      : []),
    ...(typeof results.restAsync === 'object' ? [...restAsyncLines(results.restAsync, fmt), ''] : [`REST async: ${results.restAsync ?? 'not run'}`, '']),
    ...(restOwn
      ? [
          `Routes on cores of their own: autocannon and Postgres on CPU ${restOwn.loadCpus.join(',')}, each route (${restOwn.processes} process${restOwn.processes > 1 ? 'es' : ''}) on CPU ${restOwn.proxyCpus.join(',')}.`,
          '',
          ...restTable(restOwn.targets),
        ]
      : [`REST with the routes on cores of their own: ${results.restOwnCores ?? 'not run'}`]),
    '',
    typeof results.policy === 'object'
      ? `Policy: ${fmt(results.policy.cachedUs, 2)} µs per decision cached, ${fmt(results.policy.uncachedUs, 1)} µs uncached (${results.policy.statements} client statements).`
      : `Policy: ${results.policy ?? 'not run'}`,
    '',
    ...(typeof results.catalog === 'object' ? catalogLines(results.catalog) : [`Private catalogs: ${results.catalog ?? 'not run'}`]),
    '',
    ...(upload ? uploadLines(upload) : [`Upload: ${String(results.upload ?? 'not run')}`]),
    conns
      ? `Idle connections: ${fmt(conns.connections)} authenticated wire clients, ${fmt(conns.bytesPerConnection / 1024, 1)} KB RSS each (${fmt(conns.rssBeforeMb)} → ${fmt(conns.rssAfterMb)} MB), opened in ${fmt(conns.secondsToOpen, 1)} s; a query on a fresh connection ${conns.freshQueryAnswers ? 'answers' : 'does NOT answer'}.`
      : `Idle connections: ${String(results.connections ?? 'not run')}`,
    web
      ? `Web console: first page ${fmt(web.firstPageJsGzip / 1024, 1)} KB of JavaScript gzipped (all assets: ${Object.entries(web.assets)
          .map(([n, b]) => `${n} ${fmt(b / 1024, 1)} KB`)
          .join(', ')}); log-in to the repo list rendered in Chromium p50 ${fmt(web.loginToList.median)} ms (min ${fmt(web.loginToList.min)}, max ${fmt(web.loginToList.max)}, ${web.loginToList.samples.length} log-ins); SQL editor chunk ${fmt(web.sqlEditorJsGzip / 1024, 1)} KB gzipped. Grid of a ${fmt(web.grid.rows)}-row table through POST /query/, p50 ms: plain first page ${fmt(web.grid.plainFirstPage.median, 2)}, keyset first page ${fmt(web.grid.keysetFirstPage.median, 2)}, keyset page 100 deep ${fmt(web.grid.keysetDeepPage.median, 2)}, OFFSET 9,900 ${fmt(web.grid.offsetDeepPage.median, 2)}.`
      : `Web console: ${String(results.web ?? 'not run')}`,
    '',
    ...(citus ? citusTable(citus) : [`Citus: ${String(results.citus ?? 'not run')}`]),
    ...(soak ? soakLines(soak) : [`Soak: ${String(results.soak ?? 'not run')}`]),
    '',
    ...(typeof results.tenants === 'object' ? tenantsLines(results.tenants) : [`Tenants: ${String(results.tenants ?? 'not run')}`]),
    '',
    ...(typeof results.tenantsMany === 'object' ? manyLines(results.tenantsMany) : [`Many tenants: ${String(results.tenantsMany ?? 'not run')}`]),
    '',
    ...(refBuild ? [...abLines(ab, refBuild), ''] : []),
    '| target | goal | measured | |',
    '|---|---|---|---|',
    // A goal whose scenario did not run here (--only, PgBouncer unavailable) is neither passed nor missed.
    ...targets.map((t) => `| ${t.name} | ${t.target} | ${fmt(t.ratio, 2)} | ${Number.isFinite(t.ratio) ? (t.passed ? 'pass' : 'miss') : 'not measured'} |`),
  ];
  process.stdout.write(lines.join('\n') + '\n');
  // What fails the run (the smoke run above all): a scenario that broke, an error answer, the
  // soak's pass/fail check. A goal missed is a figure to read, not a failure.
  const broken = [
    ...Object.entries(results)
      .filter(([, r]) => typeof r === 'string' && / failed: /.test(r))
      .map(([name, r]) => `${name}: ${String(r)}`),
    ...[rest, results.rest?.atRate?.targets, restOwn?.targets, citus?.rest].flatMap((t) => Object.entries(t ?? {}).filter(([, r]) => r.errors > 0).map(([name, r]) => `REST ${name}: ${r.errors} errors`)),
    ...(soak?.failures.map((f) => `soak: ${f}`) ?? []),
  ];
  for (const b of broken) log(`FAILED ${b}`);
  if (broken.length > 0) process.exitCode = 1;
  const dir = join(packageRoot, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  // latest.json is the full run the README quotes; smoke and partial runs never replace it.
  const file = quick ? 'quick.json' : only ? 'partial.json' : 'latest.json';
  await writeFile(join(dir, file), JSON.stringify({ date, machine, settings, against: refBuild && { ref: refBuild.ref, sha: refBuild.sha }, busyWhileIdle: busy, targets, ab, results }, null, 2) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exitCode = 1;
});
