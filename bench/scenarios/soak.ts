/**
 * Soak: both front ends of repobase as shipped under a steady mixed load at once — wire clients
 * running pgbench's TPC-B-like transaction (bench/lib/tpcb-load.ts, a process of its own) and
 * keep-alive REST clients sending one-row selects and small writes to `POST /query/` — for a
 * minute, and what must hold through it: no error at all (each one counted by SQLSTATE), the
 * service's RSS at the end within 10 % of what it was after warm-up, and the upstream sessions
 * back to idle (none active, none in a transaction) within a few seconds of the end.
 *
 * One user may hold `pgSessionsPerUser` wire sessions (the bench gives POOL_SIZE × 2, shared
 * evenly by the workers), so the wire clients log in as several users — signed up through the
 * service's API and given write access to the bench repo — none with more clients than one
 * worker's share: they fit wherever the workers' turns hand them.
 */
import autocannon from 'autocannon';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { packageRoot } from '../../src/shared/package-root.js';
import { POOL_SIZE, REPO, type BenchEnv } from '../env.js';
import { shareRepo, signUpWithKey } from '../lib/accounts.js';
import { rssOf, start } from '../lib/proc.js';
import { countError, errorCount, summarize, type ErrorTally } from '../lib/stats.js';
import type { LoadConfig, LoadResult } from '../lib/tpcb-load.js';

export interface SoakOptions {
  seconds: number;
  wireClients: number;
  restClients: number;
  /** pgbench scale of the bench repo's tables (their row counts). */
  scale: number;
  /**
   * Whether the RSS goal fails the scenario. Off for the smoke run: a few seconds see only where
   * the heaps' collection cycle stands (+14 % on a healthy build), not a leak.
   */
  judgeRss: boolean;
}

export interface SoakResult {
  seconds: number;
  /** Load averages (1, 5, 15 min) before and after: the machine is shared. */
  loadAverage: { before: number[]; after: number[]; cores: number };
  wire: LoadResult & { users: number; maxClientsPerUser: number; tps: number };
  rest: {
    clients: number;
    /** Share of each statement kind in the requests sent. */
    mix: Record<string, number>;
    requests: number;
    rps: number;
    latencyMs: { p50: number; p99: number; max: number };
    errors: ErrorTally;
  };
  /**
   * repobase's RSS (all its processes), sampled each second: after warm-up, halfway and at the end
   * of the load (each the median of `RSS_SPAN_SECONDS` of samples), and once idle after it. Growth that stops (caches filling, the heap finding its size
   * under a new load) shows in the first half; a leak goes on in the second.
   */
  rss: { warmupSeconds: number; warmupMb: number; midMb: number; endMb: number; changePct: number; secondHalfChangePct: number; afterMb: number; samples: { second: number; mb: number }[] };
  /** Upstream client sessions by state once the load ended, and how long until none was busy (null: not within the wait). */
  upstreamAfter: { byState: Record<string, number>; secondsToIdle: number | null; waitedSeconds: number };
  /** Why the scenario failed; empty when every goal held. */
  failures: string[];
}

/** The soak's goals. */
export const SOAK_MAX_RSS_CHANGE_PCT = 10;
const IDLE_WAIT_SECONDS = 10;
/** Seconds of RSS samples each figure is the median of. */
const RSS_SPAN_SECONDS = 5;

/** The REST mix: mostly one-row reads, and small writes on the same tables the wire clients write. */
const REST_MIX: [string, number, (scale: number) => string][] = [
  ['select one row', 0.8, (scale) => `SELECT abalance FROM "${REPO}".pgbench_accounts WHERE aid = ${aid(scale)}`],
  ['update one row', 0.1, (scale) => `UPDATE "${REPO}".pgbench_accounts SET abalance = abalance + ${randomInt(-5000, 5000)} WHERE aid = ${aid(scale)}`],
  [
    'insert one row',
    0.1,
    (scale) => `INSERT INTO "${REPO}".pgbench_history (tid, bid, aid, delta, mtime) VALUES (${randomInt(1, 10 * scale)}, ${randomInt(1, scale)}, ${aid(scale)}, ${randomInt(-5000, 5000)}, now())`,
  ],
];
const randomInt = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
const aid = (scale: number) => randomInt(1, 100_000 * scale);

function restBody(scale: number): string {
  let r = Math.random();
  for (const [, share, sql] of REST_MIX) {
    if ((r -= share) < 0) return JSON.stringify({ query_string: sql(scale) });
  }
  return JSON.stringify({ query_string: REST_MIX[0]![2](scale) });
}

/** `n` users with write access to the bench repo, none with more than `perUser` of the `n` clients. */
async function wireAccounts(env: BenchEnv, clients: number, perUser: number): Promise<LoadConfig['accounts']> {
  const users = Math.ceil(clients / perUser);
  const accounts: LoadConfig['accounts'] = [];
  // One at a time: concurrent shares of one repo answered 500 (XX000) now and then.
  for (let i = 0; i < users; i++) {
    const user = `soak_${i + 1}`;
    const key = await signUpWithKey(env.repobase.httpUrl, user);
    await shareRepo(env.repobase.httpUrl, env.repobase.key, REPO, user, 'write');
    // Even split: the first `clients % users` users get one more.
    accounts.push({ user, key, clients: Math.floor(clients / users) + (i < clients % users ? 1 : 0) });
  }
  return accounts;
}

/** Upstream client sessions by state, this one's own aside. */
async function sessionsByState(admin: pg.Client): Promise<Record<string, number>> {
  const r = await admin.query<{ state: string; n: number }>(
    `SELECT coalesce(state, 'unknown') AS state, count(*)::int AS n FROM pg_stat_activity
      WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(r.rows.map((row) => [row.state, row.n]));
}

const busy = (byState: Record<string, number>) => Object.entries(byState).some(([state, n]) => n > 0 && state !== 'idle');

/** The REST load: `clients` keep-alive connections for `seconds`, errors by SQLSTATE from the answers' bodies. */
async function restLoad(env: BenchEnv, opts: SoakOptions): Promise<SoakResult['rest']> {
  const errors: ErrorTally = {};
  const result = await autocannon({
    url: env.repobase.httpUrl,
    connections: opts.restClients,
    duration: opts.seconds,
    requests: [
      {
        method: 'POST',
        path: '/api/v1beta/query/',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${env.repobase.key}` },
        setupRequest: (req) => ({ ...req, body: restBody(opts.scale) }),
        onResponse: (status, body) => {
          if (status < 300) return;
          let error: { code?: string; message?: string } = {};
          try {
            error = (JSON.parse(body) as { error?: typeof error }).error ?? {};
          } catch {
            // not the API's error shape: counted under the HTTP status below
          }
          countError(errors, error.code ?? `HTTP ${status}`, error.message ?? body.slice(0, 200));
        },
      },
    ],
  });
  // Failures without an HTTP answer, which autocannon only counts (timeouts are among its errors).
  if (result.timeouts > 0) errors.timeout = { count: result.timeouts, message: 'no answer within 10 s (autocannon)' };
  if (result.errors - result.timeouts > 0) errors.socket = { count: result.errors - result.timeouts, message: 'connection errors (autocannon)' };
  return {
    clients: opts.restClients,
    mix: Object.fromEntries(REST_MIX.map(([name, share]) => [name, share])),
    requests: result.requests.total,
    rps: result.requests.total / result.duration,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    errors,
  };
}

export async function runSoak(env: BenchEnv, opts: SoakOptions, log: (s: string) => void): Promise<SoakResult> {
  const admin = new pg.Client({ connectionString: env.adminUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    const perUser = Math.ceil((POOL_SIZE * 2) / env.repobase.workers);
    const accounts = await wireAccounts(env, opts.wireClients, perUser);
    log(`soak: ${opts.wireClients} wire clients as ${accounts.length} users (≤ ${perUser} each), ${opts.restClients} REST clients, ${opts.seconds} s`);
    // As pgbench does before a run: no dead rows left by the scenarios before.
    await admin.query(`VACUUM "${REPO}".pgbench_branches, "${REPO}".pgbench_tellers`);
    await admin.query(`TRUNCATE "${REPO}".pgbench_history`);

    const loadBefore = loadavg();
    const windowSeconds = opts.seconds >= 20 ? 5 : 1;
    const config: LoadConfig = { host: env.repobase.host, port: env.repobase.port, database: env.repobase.dbname, scale: opts.scale, seconds: opts.seconds, accounts, windowSeconds };
    const wire = start('tpcb-load', process.execPath, [join(packageRoot, 'dist', 'bench', 'lib', 'tpcb-load.js')], { ...process.env, TPCB_LOAD_CONFIG: JSON.stringify(config) });
    try {
      const connected = await new Promise<number>((resolve, reject) => {
        const poll = setInterval(() => {
          const m = /ready (\d+)/.exec(wire.output());
          if (m || wire.child.exitCode !== null) {
            clearInterval(poll);
            if (m) resolve(Number(m[1]));
            else reject(new Error(`the wire load failed to start: ${wire.output().slice(-2000)}`));
          }
        }, 20);
      });
      log(`soak: ${connected} of ${opts.wireClients} wire clients logged in and warmed up; load running`);

      const warmupSeconds = Math.min(10, Math.max(1, Math.floor(opts.seconds / 6)));
      const samples: { second: number; mb: number }[] = [];
      const began = performance.now();
      const sampler = setInterval(() => samples.push({ second: Math.round((performance.now() - began) / 100) / 10, mb: rssOf(env.repobase.pid) / 2 ** 20 }), 1000);
      let rest: SoakResult['rest'];
      try {
        rest = await restLoad(env, opts);
      } finally {
        clearInterval(sampler);
      }
      const done = await new Promise<string>((resolve) => {
        const poll = setInterval(() => {
          const m = /result (\{.*\})/.exec(wire.output());
          if (m || wire.child.exitCode !== null) {
            clearInterval(poll);
            resolve(m?.[1] ?? '');
          }
        }, 50);
      });
      if (!done) throw new Error(`the wire load ended without a result: ${wire.output().slice(-2000)}`);
      const load = JSON.parse(done) as LoadResult;

      const upstreamStart = performance.now();
      let byState = await sessionsByState(admin);
      let secondsToIdle: number | null = busy(byState) ? null : 0;
      while (secondsToIdle === null && performance.now() - upstreamStart < IDLE_WAIT_SECONDS * 1000) {
        await new Promise((r) => setTimeout(r, 250));
        byState = await sessionsByState(admin);
        if (!busy(byState)) secondsToIdle = (performance.now() - upstreamStart) / 1000;
      }
      const afterMb = rssOf(env.repobase.pid) / 2 ** 20;

      // RSS saw-tooths by ±5–8 % between collections: each point is the median of the samples of a
      // few seconds (from warm-up on, from halfway on, and the last ones), not one sample.
      const span = Math.max(1, Math.min(RSS_SPAN_SECONDS, Math.floor(opts.seconds / 6)));
      const medianFrom = (i: number) => summarize(samples.slice(Math.max(0, i), Math.max(0, i) + span).map((s) => s.mb)).median;
      const from = (second: number) => medianFrom(samples.findIndex((s) => s.second >= second));
      const [warm, mid, end] = [from(warmupSeconds), from(opts.seconds / 2), medianFrom(samples.length - span)];
      const pct = (a: number, b: number) => ((b - a) / a) * 100;
      const result: SoakResult = {
        seconds: opts.seconds,
        loadAverage: { before: loadBefore, after: loadavg(), cores: availableParallelism() },
        wire: { ...load, users: accounts.length, maxClientsPerUser: Math.max(...accounts.map((a) => a.clients)), tps: load.transactions / load.seconds },
        rest,
        rss: { warmupSeconds, warmupMb: warm, midMb: mid, endMb: end, changePct: pct(warm, end), secondHalfChangePct: pct(mid, end), afterMb, samples },
        upstreamAfter: { byState, secondsToIdle, waitedSeconds: IDLE_WAIT_SECONDS },
        failures: [],
      };
      result.failures = failuresOf(result, connected, opts.judgeRss);
      log(
        `soak: wire ${load.transactions} transactions (${result.wire.tps.toFixed(0)} tps, p50 ${load.latencyMs.p50.toFixed(1)} ms, p99 ${load.latencyMs.p99.toFixed(1)} ms, ${errorCount(load.errors)} errors); ` +
          `REST ${rest.requests} requests (${rest.rps.toFixed(0)} req/s, p50 ${rest.latencyMs.p50} ms, p99 ${rest.latencyMs.p99} ms, ${errorCount(rest.errors)} errors); ` +
          `RSS ${result.rss.warmupMb.toFixed(0)} → ${result.rss.midMb.toFixed(0)} → ${result.rss.endMb.toFixed(0)} MB (${result.rss.changePct.toFixed(1)} %); upstream after: ${JSON.stringify(byState)}`,
      );
      for (const f of result.failures) log(`soak FAILED: ${f}`);
      return result;
    } finally {
      await wire.stop();
    }
  } finally {
    await admin.end();
  }
}

function describe(tally: ErrorTally): string {
  return Object.entries(tally)
    .map(([code, e]) => `${code} ×${e.count} (${e.message})`)
    .join(', ');
}

/** The goals the scenario checks, as the reasons it failed. */
function failuresOf(r: SoakResult, connected: number, judgeRss: boolean): string[] {
  const failures: string[] = [];
  if (connected < r.wire.clients) failures.push(`only ${connected} of ${r.wire.clients} wire clients logged in`);
  if (errorCount(r.wire.errors) > 0) failures.push(`wire errors: ${describe(r.wire.errors)}`);
  if (errorCount(r.rest.errors) > 0) failures.push(`REST errors: ${describe(r.rest.errors)}`);
  if (judgeRss && !(Math.abs(r.rss.changePct) <= SOAK_MAX_RSS_CHANGE_PCT)) {
    failures.push(`RSS changed ${r.rss.changePct.toFixed(1)} % from warm-up (${r.rss.warmupMb.toFixed(0)} MB at ${r.rss.warmupSeconds} s) to the end (${r.rss.endMb.toFixed(0)} MB); goal within ${SOAK_MAX_RSS_CHANGE_PCT} %`);
  }
  if (r.upstreamAfter.secondsToIdle === null) failures.push(`upstream sessions still busy ${r.upstreamAfter.waitedSeconds} s after the load: ${JSON.stringify(r.upstreamAfter.byState)}`);
  return failures;
}
