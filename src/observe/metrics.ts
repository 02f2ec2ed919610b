/**
 * The service's Prometheus metrics: one registry per process, and the metric objects the
 * instrumented modules import. Every name starts with `repobase_`; no label ever holds a user,
 * repo, table or key name (a label value is a front end, a state, an outcome, a SQLSTATE class,
 * a route pattern or a status), so the exposition says nothing about tenants and its size does
 * not grow with them.
 *
 * Cost on the hot paths (the relay, per chunk or statement): a counter series here is a `Tally`,
 * a plain number the caller adds to, bound once to its labels; the registry copies the tallies
 * into the counters only when scraped. prom-client's own `counter.labels(…).inc()` hashes the
 * labels on every call. States (wire clients, upstream sessions) are not counted as they change
 * but read from the live objects at scrape time, through the sources registered here.
 *
 * Nothing here imports the rest of the service: the front ends and the upstream layer depend on
 * this module, never the other way round.
 */
import cluster from 'node:cluster';
import client from 'prom-client';

/** The registry of this process: what `GET /metrics` answers (summed over the workers when there are several). */
export const registry = new client.Registry();

// A worker answers the primary's aggregation requests (prom-client's own IPC messages, which the
// service's own ignore) with this registry instead of prom-client's global one; constructing an
// AggregatorRegistry is what makes prom-client listen for them.
if (cluster.isWorker) {
  client.AggregatorRegistry.setRegistries([registry]);
  new client.AggregatorRegistry();
}

let defaultsOn = false;

/**
 * How often the event loop's delay is sampled, in ms. prom-client's default (10) wakes every
 * process 100 times a second, idle or not: ≈ 2 ms of CPU per second per process here, three
 * processes as shipped on two cores; 10 samples a second still give the lag's percentiles between
 * two scrapes.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/** Adds prom-client's process metrics (CPU, memory, event loop lag, GC, handles), once per process. */
export function collectProcessMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  client.collectDefaultMetrics({ register: registry, prefix: 'repobase_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
}

/** The exposition text of this process alone. */
export function localMetrics(): Promise<string> {
  return registry.metrics();
}

// ── counters as tallies ───────────────────────────────────────────────────────────────

/** One series of a counter: the instrumented code adds to `value`; it reaches the counter when scraped. */
export interface Tally {
  value: number;
}

type Labels<L extends string> = Readonly<Record<L, string>>;

/**
 * A counter whose series are tallies. `series(labels)` returns the tally of that label set,
 * made on first use: call it once and keep the tally where the hot path can reach it; off the
 * hot path, calling it each time (a map look-up) is fine.
 */
function tallyCounter<L extends string>(name: string, help: string, labelNames: readonly L[]): (labels: Labels<L>) => Tally {
  const tallies = new Map<string, { labels: Labels<L>; tally: Tally }>();
  new client.Counter<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, tally } of tallies.values()) this.inc(labels as Partial<Record<L, string>>, tally.value);
    },
  });
  return (labels) => {
    const key = labelNames.map((l) => labels[l]).join('\0');
    let entry = tallies.get(key);
    if (!entry) tallies.set(key, (entry = { labels: { ...labels }, tally: { value: 0 } }));
    return entry.tally;
  };
}

/** One series of a histogram: the instrumented code calls `observe`; its buckets reach the exposition when scraped. */
export class HistogramTally {
  /** Observations per bucket (not cumulative): `counts[i]` for values ≤ `bounds[i]` and above the bound before. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

/**
 * A histogram whose series are `HistogramTally`s, as `tallyCounter` is for counters: a
 * prom-client Histogram for the registry (and the workers' aggregation, which sums every
 * value by its labels), whose values are read from the tallies when scraped. prom-client's own
 * `observe` builds and hashes a label object on every call.
 */
export function tallyHistogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: readonly number[]): (labels: Labels<L>) => HistogramTally {
  const tallies = new Map<string, { labels: Labels<L>; tally: HistogramTally }>();
  class Tallied extends client.Histogram<L> {
    override async get(): Promise<client.MetricObjectWithValues<client.MetricValueWithName<L>>> {
      const values: client.MetricValueWithName<string>[] = [];
      for (const { labels, tally } of tallies.values()) {
        let cumulative = 0;
        buckets.forEach((le, i) => {
          cumulative += tally.counts[i]!;
          values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
        });
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: tally.count });
        values.push({ metricName: `${name}_sum`, labels: { ...labels }, value: tally.sum });
        values.push({ metricName: `${name}_count`, labels: { ...labels }, value: tally.count });
      }
      // prom-client's types declare MetricType a numeric enum it does not export; the registry reads the string.
      return { name, help, type: 'histogram' as unknown as client.MetricType, aggregator: 'sum', collect: () => undefined, values: values as client.MetricValueWithName<L>[] };
    }

    /** What the registry's text exposition reads when a metric has it (prom-client's Histogram does). */
    getForPromString(): Promise<client.MetricObjectWithValues<client.MetricValueWithName<L>>> {
      return this.get();
    }
  }
  new Tallied({ name, help, labelNames, buckets: [...buckets], registers: [registry] });
  return (labels) => {
    const key = labelNames.map((l) => labels[l]).join('\0');
    let entry = tallies.get(key);
    if (!entry) tallies.set(key, (entry = { labels: { ...labels }, tally: new HistogramTally(buckets) }));
    return entry.tally;
  };
}

export type FrontEnd = 'wire' | 'rest';

// ── statements and errors ───────────────────────────────────────────────────────────────

const statements = tallyCounter('repobase_statements_total', 'Statements decided by the policy, by front end and outcome (allowed, rewritten, handled by the control plane, denied).', ['front_end', 'outcome']);

/** The policy decision kinds, as the outcome label says them. */
const OUTCOMES = { allow: 'allowed', rewrite: 'rewritten', handled: 'handled', deny: 'denied' } as const;

/** Statement tallies of one front end, by decision kind: `decisions.wire[d.kind].value++`. */
export const decisions: Readonly<Record<FrontEnd, Readonly<Record<keyof typeof OUTCOMES, Tally>>>> = {
  wire: decisionTallies('wire'),
  rest: decisionTallies('rest'),
};

function decisionTallies(frontEnd: FrontEnd): Record<keyof typeof OUTCOMES, Tally> {
  return {
    allow: statements({ front_end: frontEnd, outcome: OUTCOMES.allow }),
    rewrite: statements({ front_end: frontEnd, outcome: OUTCOMES.rewrite }),
    handled: statements({ front_end: frontEnd, outcome: OUTCOMES.handled }),
    deny: statements({ front_end: frontEnd, outcome: OUTCOMES.deny }),
  };
}

/**
 * Where an error a client received comes from: `policy` (a statement the policy refused),
 * `upstream` (Postgres' own error, or the upstream connection lost), `proxy` (refused by
 * repobase itself: start-up, authentication, protocol, limits, request validation).
 */
export type ErrorOrigin = 'policy' | 'proxy' | 'upstream';

const errors = tallyCounter('repobase_errors_total', 'Errors sent to clients, by front end, origin (policy, proxy, upstream) and SQLSTATE class (its first two characters).', ['front_end', 'origin', 'class']);

/** A SQLSTATE is five characters of [0-9A-Z]; anything else (never expected) is one class, so the label stays bounded. */
function sqlStateClass(code: string): string {
  return /^[0-9A-Z]{5}$/.test(code) ? code.slice(0, 2) : 'XX';
}

/** Counts one error sent to a client (not on a hot path: errors are the exception). */
export function countError(frontEnd: FrontEnd, origin: ErrorOrigin, code: string): void {
  errors({ front_end: frontEnd, origin, class: sqlStateClass(code) }).value++;
}

// ── wire traffic ────────────────────────────────────────────────────────────────────────

const bytes = tallyCounter('repobase_bytes_total', 'Bytes received from clients (in) and sent to them (out), by front end; wire only: the relayed protocol bytes after start-up.', ['front_end', 'direction']);

export const wireBytesIn = bytes({ front_end: 'wire', direction: 'in' });
export const wireBytesOut = bytes({ front_end: 'wire', direction: 'out' });

const cancels = tallyCounter(
  'repobase_wire_cancel_requests_total',
  'Wire CancelRequests by outcome: forwarded (to the upstream backend of the client holding the key), unknown (no client holds the key), peer (passed on to the other processes of the service: the one that gave out the key then counts it forwarded or unknown).',
  ['outcome'],
);

export const cancelRequests = {
  forwarded: cancels({ outcome: 'forwarded' }),
  unknown: cancels({ outcome: 'unknown' }),
  peer: cancels({ outcome: 'peer' }),
} as const;

// ── pooling by transaction ──────────────────────────────────────────────────────────────

const replays = tallyCounter('repobase_wire_setting_replays_total', "Wire requests ahead of which a pooled backend was given the client's settings (the difference from what it had).", []);
const reprepares = tallyCounter('repobase_wire_statement_reprepares_total', 'Prepared statements of wire clients made again, unseen, on a pooled backend that lacked them.', []);
const checks = tallyCounter('repobase_wire_state_checks_total', 'Times a pooled backend was asked what session state it holds, after code the proxy could not see into (a user function, DO, CALL) or to learn whether a pin is over.', []);

const captures = tallyCounter('repobase_wire_sequence_captures_total', "Times a pooled client's sequence state (currval, lastval) was read from its backend after a transaction that may have made some.", []);

export const settingReplays = replays({});
export const statementReprepares = reprepares({});
export const stateChecks = checks({});
export const sequenceCaptures = captures({});

const authFailures = tallyCounter('repobase_auth_failures_total', 'Failed authentications, by front end: wire (password or SCRAM exchange), rest (bearer API key), console (log-in with user name and password).', ['front_end']);

export const authFailed = {
  wire: authFailures({ front_end: 'wire' }),
  rest: authFailures({ front_end: 'rest' }),
  console: authFailures({ front_end: 'console' }),
} as const;

// ── uploads ─────────────────────────────────────────────────────────────────────────────

const uploads = tallyCounter('repobase_uploads_total', 'Uploads (POST /import/) finished, by outcome (done, failed).', ['outcome']);
const uploadBytes = tallyCounter('repobase_upload_bytes_total', 'Bytes of uploaded files read, failed uploads included.', []);
const uploadRows = tallyCounter('repobase_upload_rows_total', 'Rows uploads staged or wrote, failed uploads included.', []);

const uploadTallies = { done: uploads({ outcome: 'done' }), failed: uploads({ outcome: 'failed' }), bytes: uploadBytes({}), rows: uploadRows({}) };

/** Counts one finished upload with what it read and wrote. */
export function countUpload(progress: { bytes: number; rows: number }, ok: boolean): void {
  (ok ? uploadTallies.done : uploadTallies.failed).value++;
  uploadTallies.bytes.value += progress.bytes;
  uploadTallies.rows.value += progress.rows;
}

// ── policy cache ────────────────────────────────────────────────────────────────────────

const policyCache = tallyCounter(
  'repobase_policy_cache_lookups_total',
  "Look-ups in the policy's analysis caches (by exact text, then by literal shape), by result (hit, miss): a statement found by its shape counts a miss, then a hit.",
  ['result'],
);

export const policyCacheHit = policyCache({ result: 'hit' });
export const policyCacheMiss = policyCache({ result: 'miss' });

// ── REST requests ───────────────────────────────────────────────────────────────────────
// Every REST request is counted by route and status and timed: two look-ups of strings fastify
// already holds, an addition and a bucket's increment, nothing allocated (see tallyHistogram).

const httpRequests = tallyCounter('repobase_http_requests_total', 'HTTP requests answered, by method, route pattern (never the URL itself; "unmatched" for no route) and status.', ['method', 'route', 'status']);

const httpDuration = tallyHistogram(
  'repobase_http_request_duration_seconds',
  'Time from an HTTP request to the end of its answer (a streamed answer included), by method and route pattern.',
  ['method', 'route'],
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
);

/** The tallies of one method and route: its duration, and its count by status (made on first use). */
interface RouteTallies {
  duration: HistogramTally;
  byStatus: Map<number, Tally>;
}

/** method → route pattern → tallies: two look-ups of strings fastify already holds, no key built per request. */
const routeTallies = new Map<string, Map<string, RouteTallies>>();

/** Counts one answered HTTP request; `route` is the route's pattern. */
export function countHttpRequest(method: string, route: string, status: number, seconds: number): void {
  let routes = routeTallies.get(method);
  if (!routes) routeTallies.set(method, (routes = new Map()));
  let tallies = routes.get(route);
  if (!tallies) routes.set(route, (tallies = { duration: httpDuration({ method, route }), byStatus: new Map() }));
  let count = tallies.byStatus.get(status);
  if (!count) tallies.byStatus.set(status, (count = httpRequests({ method, route, status: String(status) })));
  count.value++;
  tallies.duration.observe(seconds);
}

// ── live states, read at scrape time ────────────────────────────────────────────────────

/** Wire clients by state: connected but not through start-up and authentication yet, or by their session's state. */
export interface WireClientStates {
  starting: number;
  idle: number;
  active: number;
  idle_in_transaction: number;
}

/** Upstream sessions of a pool by state, and the requests waiting for one. */
export interface PoolStates {
  active: number;
  idle: number;
  waiting: number;
}

const wireSources = new Set<() => WireClientStates>();
const poolSources = new Set<{ pool: string; read: () => PoolStates }>();

new client.Gauge({
  name: 'repobase_wire_clients',
  help: 'Wire client connections by state: starting (start-up and authentication), idle, active (a request in flight), idle_in_transaction (a transaction open, failed ones included).',
  labelNames: ['state'],
  registers: [registry],
  collect() {
    const sum: WireClientStates = { starting: 0, idle: 0, active: 0, idle_in_transaction: 0 };
    for (const read of wireSources) {
      const s = read();
      for (const k of Object.keys(sum) as (keyof WireClientStates)[]) sum[k] += s[k];
    }
    for (const [state, n] of Object.entries(sum)) this.set({ state }, n);
  },
});

new client.Gauge({
  name: 'repobase_upstream_sessions',
  help: "Upstream Postgres sessions (backends) by pool (wire: held by wire clients for a transaction, or pinned, or for the session in session mode; rest: POST /query/; import: uploads) and state (active: handed out or opening; idle: pooled), and waiting: requests waiting in line for one because their user's, or the service's, are all busy.",
  labelNames: ['pool', 'state'],
  registers: [registry],
  collect() {
    this.reset();
    const sums = new Map<string, PoolStates>();
    for (const { pool, read } of poolSources) {
      const s = read();
      const sum = sums.get(pool) ?? { active: 0, idle: 0, waiting: 0 };
      sums.set(pool, { active: sum.active + s.active, idle: sum.idle + s.idle, waiting: sum.waiting + s.waiting });
    }
    for (const [pool, s] of sums) for (const [state, n] of Object.entries(s)) this.set({ pool, state }, n);
  },
});

const pinSources = new Set<() => Record<string, number>>();

new client.Gauge({
  name: 'repobase_wire_pinned_clients',
  help: "Wire clients that keep their backend between transactions (pooling by transaction), by reason: temp (temporary objects), advisory_lock (session advisory locks), listen (LISTEN), cursor (cursors WITH HOLD), unknown (the backend is being asked what a user's function left). A client pinned for several reasons counts under each.",
  labelNames: ['reason'],
  registers: [registry],
  collect() {
    this.reset();
    const sum = new Map<string, number>();
    for (const read of pinSources) for (const [reason, n] of Object.entries(read())) sum.set(reason, (sum.get(reason) ?? 0) + n);
    for (const [reason, n] of sum) this.set({ reason }, n);
  },
});

/** Registers the wire front end's pinned clients by reason (read when scraped); returns the unregistration. */
export function watchPins(read: () => Record<string, number>): () => void {
  pinSources.add(read);
  return () => void pinSources.delete(read);
}

/** Registers the wire front end's client states (read when scraped); returns the unregistration. */
export function watchWireClients(read: () => WireClientStates): () => void {
  wireSources.add(read);
  return () => void wireSources.delete(read);
}

/** Registers an upstream pool's session states under `pool` (read when scraped); returns the unregistration. */
export function watchPool(pool: string, read: () => PoolStates): () => void {
  const source = { pool, read };
  poolSources.add(source);
  return () => void poolSources.delete(source);
}

const poolWait = tallyHistogram(
  'repobase_upstream_pool_wait_seconds',
  "Time a request waited for an upstream session because its user's (or the service's) sessions in that pool were all busy (until one was free, or the wait timed out with 53300), by pool.",
  ['pool'],
  [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
);

/** The wait histogram of `pool`, observed in seconds: looked up once by its pool. */
export function poolWaitTally(pool: string): HistogramTally {
  return poolWait({ pool });
}
