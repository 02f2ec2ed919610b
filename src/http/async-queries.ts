/**
 * Async queries and the query history of one serving process. Any instance answers for any
 * query: state and results live in the control plane. A submitted query is queued, then claimed —
 * here at once when its user has fewer than `asyncMaxRunning` running on the whole service, else
 * later by whichever process sees a free slot (a run that ends claims its user's next one, and
 * every process sweeps every few seconds). The process that claims it runs it (async-run.ts)
 * under its runner id (runner-channel.ts), beats its heart while it runs, and cancels it when a
 * `DELETE` anywhere says so. Queries of a process that died are marked failed by whoever notices.
 */
import type pg from 'pg';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import { deleteOldEntries, getEntry, listEntries, placeOfHistoryId, newestFirst, removeEntry } from '../control/history-pages.js';
import { QueryHistory } from '../control/query-history.js';
import {
  deleteOldQueries,
  expireResults,
  failOrphans,
  getQuery,
  insertQueued,
  listQueries,
  removeQuery,
  stillRunning,
  usersWaiting,
  type QueryOwner,
  type QueryRecord,
  type QueryStatus,
  type Removal,
} from '../control/query-records.js';
import { abandonRuns, claimQueued, heartbeat, statusOf } from '../control/query-runs.js';
import { notifyCancel, openRunnerChannel, type RunnerChannel } from '../control/runner-channel.js';
import type { Policy } from '../policy/index.js';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { CancelFlag } from '../upstream/cancel-flag.js';
import { TypeCatalog } from '../upstream/query-types.js';
import type { BackendBudget } from '../upstream/budget.js';
import type { Cluster } from '../upstream/cluster.js';
import { restSessionSettings } from '../upstream/role-pools.js';
import { sessionPoolFor, type SessionPool } from '../upstream/session-pool.js';
import { cancelUpstream } from '../upstream/session.js';
import { runAsync, type RunDeps } from './async-run.js';
import { decide, type AuditSource, type Run } from './statement-decision.js';

/** Heartbeat of the runs here, sweep for orphans and queued queries: this often. */
const TICK_MS = 5_000;
/** Results past their time and history past its days are deleted this often (and at start), or four times per asyncResultTtlMs when that is shorter. */
const RETENTION_MS = 10 * 60 * 1000;
/** How long a cancel waits for the statement to be gone before it answers anyway. */
const CANCEL_WAIT_MS = 6_000;
/** How often a wait for a query running elsewhere looks at its row. */
const POLL_MS = 100;

export interface AsyncQueriesDeps {
  control: ControlPlane;
  policy: Policy;
  /** Upstream sessions of async statements (see asyncSessionSettings). */
  sessions: SessionPool;
  sessionSettings: Readonly<Record<string, string>>;
  /** Where the runner channel connects (the cluster's admin connection settings). */
  adminConfig: pg.ClientConfig;
  /** Where CancelRequests for upstream backends go. */
  upstream: { host: string; port: number };
  config: Pick<Config, 'asyncMaxRunning' | 'asyncResultTtlMs' | 'asyncResultMaxBytes' | 'queryHistoryDays'>;
  log: Logger;
}

interface LocalRun {
  stop: CancelFlag;
  done: Promise<void>;
  reason: PgError | undefined;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
const ended = (status: QueryStatus) => status !== 'queued' && status !== 'running';

function interrupted(why: string): PgError {
  return new PgError(SqlState.AdminShutdown, `the query was interrupted: ${why}`, { hint: 'run it again' });
}

export class AsyncQueries {
  /** The history of POST /query/ (sync queries; async ones are their own rows). */
  readonly history: QueryHistory;
  private readonly local = new Map<string, LocalRun>();
  private readonly runDeps: RunDeps;
  private channel: RunnerChannel | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;

  private constructor(private readonly deps: AsyncQueriesDeps) {
    this.history = new QueryHistory(deps.control.admin, deps.log);
    this.runDeps = {
      control: deps.control,
      sessions: deps.sessions,
      sessionSettings: deps.sessionSettings,
      types: new TypeCatalog(deps.control.admin),
      maxBytes: deps.config.asyncResultMaxBytes,
      log: deps.log,
    };
  }

  /**
   * Async queries on `cluster`: their own upstream sessions (within the service's `budget` of
   * backends), each with the async statement timeout and a silence watch one second past it.
   */
  static start(opts: { cluster: Pick<Cluster, 'roleConnection' | 'adminConfig' | 'host' | 'port'>; control: ControlPlane; policy: Policy; config: Config; log: Logger; budget?: BackendBudget }): Promise<AsyncQueries> {
    const { cluster, config, log } = opts;
    const sessions = sessionPoolFor(cluster, {
      maxPerRole: config.asyncMaxRunning,
      idleMs: config.upstreamIdleMs,
      reset: 'lazy',
      waitMs: 10_000,
      budget: opts.budget,
      metricsName: 'async',
      silenceMs: config.asyncStatementTimeoutMs + 1_000,
      log,
    });
    const sessionSettings = { ...restSessionSettings(), statement_timeout: String(config.asyncStatementTimeoutMs), application_name: 'repobase-async' };
    return AsyncQueries.open({ control: opts.control, policy: opts.policy, sessions, sessionSettings, adminConfig: cluster.adminConfig, upstream: { host: cluster.host, port: cluster.port }, config, log });
  }

  /** Opens the runner channel and starts the heartbeat, the sweeps and the retention. */
  static async open(deps: AsyncQueriesDeps): Promise<AsyncQueries> {
    const queries = new AsyncQueries({ ...deps, log: deps.log.child({ mod: 'async-queries' }) });
    queries.channel = await openRunnerChannel(deps.adminConfig, { cancel: (id) => void queries.heard(id), lost: () => queries.stopAll(interrupted('this server lost its connection to the database')) }, queries.deps.log);
    const every = (ms: number, fn: () => Promise<void>) => {
      const timer = setInterval(() => void fn().catch((err: unknown) => queries.deps.log.warn({ err }, 'async query upkeep failed')), ms);
      timer.unref();
      queries.timers.push(timer);
    };
    every(TICK_MS, () => queries.tick());
    every(Math.max(250, Math.min(RETENTION_MS, deps.config.asyncResultTtlMs / 4)), () => queries.retain());
    void queries.retain().catch((err: unknown) => queries.deps.log.warn({ err }, 'deleting old queries failed'));
    return queries;
  }

  /** The admin pool (where results are read from). */
  get admin(): pg.Pool {
    return this.deps.control.admin;
  }

  /** Whether sync queries are recorded (config queryHistoryDays > 0). */
  get recordsHistory(): boolean {
    return this.deps.config.queryHistoryDays > 0;
  }

  /** Queues `queryString` of `principal` (decided as `run`) and starts it here if a slot is free. */
  async submit(principal: Principal, queryString: string, run: Run, source: AuditSource): Promise<QueryRecord> {
    const record = await insertQueued(this.admin, { user: principal.user, keyId: principal.keyId, queryString });
    try {
      const started = await this.claim(principal.user, { id: record.id, run, source, principal });
      // An older query of the user's may have taken the slot (oldest first): this one waits.
      return started?.id === record.id ? started : record;
    } catch (err: unknown) {
      // It is queued all the same: a sweep starts it once a claim goes through.
      this.deps.log.warn({ err, query: record.id }, 'starting an async query failed; it stays queued');
      return record;
    }
  }

  /**
   * Claims `user`'s oldest queued query and starts it here; returns it, running, or undefined
   * when none is queued or no slot is free. `submitted` is the query just sent, already decided:
   * when it is the one claimed it runs as decided, any other is decided again.
   */
  private async claim(user: string, submitted?: { id: string; run: Run; source: AuditSource; principal: Principal }): Promise<QueryRecord | undefined> {
    const runner = this.channel?.id;
    if (runner === undefined || this.closed) return undefined;
    const record = await claimQueued(this.admin, user, runner, this.deps.config.asyncMaxRunning);
    if (!record) return undefined;
    const local: LocalRun = { stop: new CancelFlag(), done: Promise.resolve(), reason: undefined };
    this.local.set(record.id, local);
    const mine = submitted?.id === record.id ? submitted : undefined;
    const source: AuditSource = mine?.source ?? { frontEnd: 'rest', source: null, requestId: null };
    // A query that waited runs with its key as the key is now: its scope, or 401 when it was
    // revoked or expired meanwhile.
    const principal = mine?.principal ?? this.deps.control.keys.principalOfKey(record.user, record.keyId);
    local.done = this.start(record, principal, mine?.run, source, runner, local).finally(() => {
      this.local.delete(record.id);
      // Its slot is free: the user's next query, if one waits.
      if (!this.closed) void this.claim(user).catch((err: unknown) => this.deps.log.warn({ err }, 'starting a queued query failed'));
    });
    return record;
  }

  /** Runs a claimed query; one that waited is decided again (rights may have changed meanwhile). */
  private async start(record: QueryRecord, principal: Principal | Promise<Principal>, run: Run | undefined, source: AuditSource, runner: number, local: LocalRun): Promise<void> {
    const known = await Promise.resolve(principal).catch((err: unknown) => err as Error);
    return runAsync(this.runDeps, {
      id: record.id,
      principal: known instanceof Error ? { user: record.user, keyId: record.keyId, role: record.user } : known,
      queryString: record.queryString,
      decide: () => {
        if (known instanceof Error) throw known;
        return run ?? decide(this.deps, known, record.queryString, source);
      },
      source,
      runner,
      stop: local.stop,
      stopReason: () => local.reason,
    });
  }

  /** Resolves once query `id` has ended, or after `ms`. */
  async waitFor(id: string, owner: QueryOwner, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    const local = this.local.get(id);
    if (local) {
      await Promise.race([local.done, sleep(ms)]);
      return;
    }
    while (Date.now() < deadline) {
      const record = await this.get(id, owner);
      if (!record || ended(record.status)) return;
      await sleep(Math.min(POLL_MS, deadline - Date.now()));
    }
  }

  /** `owner`'s query `id`; one that was running on a process now gone reads failed. */
  async get(id: string, owner: QueryOwner): Promise<QueryRecord | undefined> {
    if (placeOfHistoryId(id) !== undefined) return getEntry(this.admin, id, owner);
    const record = await getQuery(this.admin, id, owner);
    if (record?.status !== 'running' || this.local.has(id) || (await this.failOrphans({ id })) === 0) return record;
    return getQuery(this.admin, id, owner);
  }

  /** `owner`'s queries, newest first (this process's history written first, so a client sees its own queries at once). */
  async list(owner: QueryOwner, filter: { status?: QueryStatus | undefined; limit: number }): Promise<QueryRecord[]> {
    await this.history.flush();
    await this.failOrphans({ user: owner.user });
    const [queries, history] = await Promise.all([listQueries(this.admin, owner, filter), listEntries(this.admin, owner, filter)]);
    return [...queries, ...history].sort(newestFirst).slice(0, filter.limit);
  }

  /** Cancels `owner`'s query `id` (waiting until its statement is gone) or deletes it when it has ended. */
  async remove(id: string, owner: QueryOwner): Promise<Removal> {
    if (placeOfHistoryId(id) !== undefined) return (await removeEntry(this.admin, id, owner)) ? { kind: 'deleted' } : { kind: 'missing' };
    const removal = await removeQuery(this.admin, id, owner);
    if (removal.kind !== 'cancelled' || removal.record.runner === null) return removal;
    const local = this.local.get(id);
    if (local) {
      local.stop.cancel();
      await Promise.race([local.done, sleep(CANCEL_WAIT_MS)]);
      return removal;
    }
    await notifyCancel(this.admin, id);
    const deadline = Date.now() + CANCEL_WAIT_MS;
    while (Date.now() < deadline && (await stillRunning(this.admin, id))) await sleep(50);
    return removal;
  }

  /** A cancel heard on the channel: obeyed if the query runs here and its row says so (anyone can NOTIFY). */
  private async heard(id: string): Promise<void> {
    const local = this.local.get(id);
    if (!local) return;
    const status = await statusOf(this.admin, id);
    if (status === undefined || status === 'cancelled') local.stop.cancel();
  }

  /** Ends every run here early with `reason`. */
  private stopAll(reason: PgError): void {
    for (const local of this.local.values()) {
      local.reason ??= reason;
      local.stop.cancel();
    }
  }

  /** Marks failed the running queries (in `scope`) of processes that are gone, and cancels their statements in Postgres; returns how many. */
  private async failOrphans(scope: { id?: string; user?: string }): Promise<number> {
    const { failed, backends } = await failOrphans(this.admin, scope);
    for (const backend of backends) void cancelUpstream({ ...this.deps.upstream, ...backend });
    if (failed > 0) this.deps.log.warn({ failed }, 'async queries of a server that is gone marked failed');
    return failed;
  }

  /** Heartbeat of the runs here (and the cancels it finds), orphans of dead processes, and queued queries with a free slot. */
  private async tick(): Promise<void> {
    const runner = this.channel?.id;
    if (runner === undefined || this.closed) return;
    if (this.local.size > 0) {
      const statuses = await heartbeat(this.admin, runner, [...this.local.keys()]);
      for (const [id, local] of this.local) {
        const status = statuses.get(id);
        if (status === undefined || status === 'cancelled' || status === 'failed') local.stop.cancel();
      }
    }
    await this.failOrphans({});
    for (const user of await usersWaiting(this.admin, this.deps.config.asyncMaxRunning)) while (await this.claim(user));
  }

  private async retain(): Promise<void> {
    const { asyncResultTtlMs, queryHistoryDays } = this.deps.config;
    await expireResults(this.admin, asyncResultTtlMs, queryHistoryDays > 0);
    if (queryHistoryDays > 0) await Promise.all([deleteOldQueries(this.admin, queryHistoryDays), deleteOldEntries(this.admin, queryHistoryDays)]);
  }

  /** Stops the runs here (each marked failed: the server stopped), writes the history left, closes the channel. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    this.stopAll(interrupted('the server running it was stopped'));
    await Promise.all([...this.local.values()].map((l) => l.done));
    const runner = this.channel?.id;
    if (runner !== undefined) await abandonRuns(this.admin, runner, { code: SqlState.AdminShutdown, message: 'the query was interrupted: the server running it was stopped', detail: null, hint: 'run it again', position: null }).catch(() => undefined);
    await this.channel?.close();
    await this.history.close();
    this.deps.sessions.close();
  }
}
