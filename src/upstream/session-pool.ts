/**
 * Upstream sessions per (role, start-up parameters), handed out and taken back: the wire front
 * end's backends (each held by a client for one transaction, or for its whole session in session
 * mode) and the REST API's (one statement each). Every role keeps its own sessions: a session is
 * only ever handed to a user of the role it logged in as.
 *
 * - **Affinity.** `takeIdle` gives a caller the session it names (the one it used last) when that
 *   one is idle, else the most recently used: a client that comes back finds its own backend.
 * - **Limits.** At most `maxPerRole` sessions per user — a user's own role and the roles of its
 *   scoped keys (`<user>#<key id>`) together — and every session holds a slot of the process's
 *   `BackendBudget`, shared with the other pools. A request past either limit waits in order; a
 *   session given back goes straight to the longest waiter of its role, idle sessions of other
 *   roles are closed for a role that waits for a slot (those of the same user first, when the
 *   user is at its limit), and past `waitMs` the request fails with 53300.
 * - **Size follows load.** A session opens only when a request finds none idle, and closes after
 *   `idleMs` idle (or at once, when another role waits for its slot).
 */
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { BackendCode, buildQuery, buildTerminate, decodeReadyForQuery } from '../protocol/index.js';
import type { Cluster } from './cluster.js';
import { BackendBudget } from './budget.js';
import { poolWaitTally, watchPool, type HistogramTally } from '../observe/metrics.js';
import { ignore, noteParameterStatus, openUpstreamSession, type UpstreamSession, type UpstreamTarget } from './session.js';
import { SilenceWatch } from './silence-watch.js';
import { TenantLimits } from './tenant-limits.js';

interface Idle {
  session: UpstreamSession;
  since: number;
  /** Set while the session is lent (see `lend`): tells its holder it is taken from it. */
  revoke?: (() => void) | undefined;
}

/** A request waiting in its role's line (no closure or timer of its own: many clients on few backends make one per transaction). */
interface Waiter {
  key: string;
  params: Readonly<Record<string, string>>;
  /** When it began to wait (performance.now()): how long it has waited, its deadline, the wait histogram. */
  started: number;
  resolve(session: UpstreamSession): void;
  reject(err: unknown): void;
  /** Set while it waits in the budget's line: leaves it. */
  leaveBudget?: (() => void) | undefined;
}

export interface SessionPoolOptions {
  /** Login settings of a role's upstream session. */
  target(role: string): UpstreamTarget;
  /** Sessions per role, busy and idle together. */
  maxPerRole: number;
  idleMs: number;
  /**
   * `eager`: a session given back clean runs DISCARD ALL before it is pooled (the wire relay in
   * session mode hands the socket to a client as is). `lazy`: it is pooled at once, marked
   * as its user left it, and its next user resets it in the same round trip as its own
   * statement when it is marked `needsReset` (the REST API: every statement marks it, and one the
   * policy found setting-free clears the mark again, see query-run.ts). `none`: pooled as it is,
   * its user keeping track of what it holds (the wire relay pooling by transaction); `release(…, 'reset')` asks for a DISCARD ALL all the same.
   */
  reset: 'eager' | 'lazy' | 'none';
  /** How long `acquire` waits for room before 53300. */
  waitMs: number;
  /** The process's backends, shared with the other pools; unset: this pool's own, unbounded. */
  budget?: BackendBudget;
  /** The pool's name in the metrics (`wire`, `rest`); unset: not in the metrics. */
  metricsName?: string;
  /**
   * Set for a pool whose every handed-out session runs one statement (the REST API's): a session
   * handed out that passes no byte either way for this long, unless its reader paused it, is
   * closed (see `SilenceWatch`), so its statement fails with 08006 instead of waiting for ever on
   * a network that stopped answering. Unset: the user watches (the wire relay knows when an
   * answer is owed).
   */
  silenceMs?: number;
  /**
   * Pooling by transaction: a role's backend in use comes back within a transaction's time, so a
   * request that finds none idle waits for one, and one is opened for it only once it has waited
   * this long — or at once when none of the role's backends is in use or being opened. The pool
   * then follows the load rather than the number of clients: a burst of short transactions is
   * served by the backends that come back, while clients that keep backends busy longer get
   * theirs a moment later, side by side. Unset: a request that finds none idle opens one at once
   * (sessions held for a long time; the REST API's single statements).
   */
  growAfterMs?: number;
  log: Logger;
}

const DISCARD = buildQuery('DISCARD ALL');

/** Pooling by transaction, budget full: how long another role's backend stays idle before it is closed for a role that waits. */
const RECLAIM_IDLE_MS = 1_000;

/** How a session comes back: reusable as it is, reusable after DISCARD ALL, or to be closed. */
export type Return = 'keep' | 'reset' | 'close';

export class SessionPool {
  private readonly idle = new Map<string, Idle[]>();
  private readonly count = new Map<string, number>();
  /** `maxPerRole` per user: its own role's sessions and its keys' roles' together. */
  private readonly limits: TenantLimits;
  private readonly gone = new WeakSet<UpstreamSession>();
  /** Watches the handed-out sessions for silence when `silenceMs` is set. */
  private readonly silence: SilenceWatch | undefined;
  /** Every session open (handed out or parked), from its login until it is gone; kept for the silence watch only. */
  private readonly live = new Set<UpstreamSession>();
  private readonly waiting = new Map<string, Waiter[]>();
  /**
   * Per role with a line, since when it has had somebody in it without a break — or since a
   * session was last opened for it, whichever came later (see `makeRoom`).
   */
  private readonly queuedSince = new Map<string, number>();
  /** Per role with a line, the timer that fails its first waiter at its deadline (53300 after `waitMs`). */
  private readonly lineTimers = new Map<string, NodeJS.Timeout>();
  private readonly waitTally: HistogramTally | undefined;
  /** Sessions being opened, per role. */
  private readonly opening = new Map<string, number>();
  /** Per role, the timer that looks at its line again once its first has waited `growAfterMs`. */
  private readonly growTimers = new Map<string, NodeJS.Timeout>();
  /** How late (ms) the latest of those looks came: the process's event loop was that busy. */
  private lateBy = 0;
  /** ParameterStatus values of the latest login per key: what a client is greeted with before it has a session. */
  private readonly greetings = new Map<string, ReadonlyMap<string, string>>();
  private readonly learning = new Map<string, Promise<ReadonlyMap<string, string>>>();
  private readonly budget: BackendBudget;
  private readonly sweeper: NodeJS.Timeout;
  private readonly unregister: () => void;
  private readonly unwatch: (() => void) | undefined;
  private closed = false;

  constructor(private readonly opts: SessionPoolOptions) {
    this.limits = new TenantLimits(opts.maxPerRole);
    this.budget = opts.budget ?? new BackendBudget(Number.MAX_SAFE_INTEGER);
    this.unregister = this.budget.register({ oldestIdle: () => this.oldestIdle()?.idle.since, closeOldestIdle: () => this.closeOldestIdle() });
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(opts.idleMs, 10_000)));
    this.sweeper.unref();
    if (opts.metricsName) this.unwatch = watchPool(opts.metricsName, () => this.states());
    this.waitTally = opts.metricsName ? poolWaitTally(opts.metricsName) : undefined;
    if (opts.silenceMs) this.silence = new SilenceWatch(opts.silenceMs, () => this.handedOut());
  }

  private atLimit(role: string): boolean {
    return this.limits.atLimit(role);
  }

  /** Whether another role of the same user waits in a line (for a session of this user's share). */
  private otherWaits(role: string): boolean {
    return this.limits.otherWaits(role, this.waiting.has(role));
  }

  /** Sessions handed out (or opening), pooled, and acquires waiting for room: read when the metrics are scraped. */
  private states(): { active: number; idle: number; waiting: number } {
    let total = 0;
    let idle = 0;
    let waiting = 0;
    for (const n of this.count.values()) total += n;
    for (const list of this.idle.values()) idle += list.length;
    for (const list of this.waiting.values()) waiting += list.length;
    return { active: total - idle, idle, waiting };
  }

  /**
   * Parameter sets are few and long-lived (one per client settings): the key of each (role,
   * parameter set) is made once, so the hot path looks pools up with a string whose hash V8 has
   * already computed instead of concatenating and hashing a new one per request.
   */
  private readonly keys = new WeakMap<object, Map<string, string>>();
  /** The latest key made, and what it was made of. */
  private lastRole = '';
  private lastParams: object | undefined;
  private lastKey = '';

  private key(role: string, params: Readonly<Record<string, string>>): string {
    // The same caller asks again and again (a client's every transaction): its key is at hand.
    if (params === this.lastParams && role === this.lastRole) return this.lastKey;
    let byRole = this.keys.get(params);
    if (byRole === undefined) {
      byRole = new Map();
      this.keys.set(params, byRole);
    }
    let key = byRole.get(role);
    if (key === undefined) {
      if (byRole.size > 10_000) byRole.clear();
      key = role + '\0' + JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1)));
      byRole.set(role, key);
    }
    this.lastRole = role;
    this.lastParams = params;
    this.lastKey = key;
    return key;
  }

  /**
   * The ParameterStatus values a session with these parameters has at login: what a client is
   * greeted with before it holds a session. Learnt once per key from a real login (the session is
   * then pooled); concurrent first logins wait for that one instead of each opening a session.
   */
  greeting(role: string, params: Readonly<Record<string, string>>): ReadonlyMap<string, string> | Promise<ReadonlyMap<string, string>> {
    const key = this.key(role, params);
    const known = this.greetings.get(key);
    if (known) return known;
    let learning = this.learning.get(key);
    if (!learning) {
      learning = this.acquire(role, params)
        .then((session) => {
          this.release(role, params, session, 'keep');
          return session.parameters;
        })
        .finally(() => this.learning.delete(key));
      this.learning.set(key, learning);
    }
    return learning;
  }

  /**
   * An idle session with exactly these startup parameters, if there is one (no wait): `prefer`
   * if it is idle, else the one used last. Waiting requests of the role come first.
   */
  takeIdle(role: string, params: Readonly<Record<string, string>>, prefer?: UpstreamSession): UpstreamSession | undefined {
    const key = this.key(role, params);
    if (this.waiting.has(role)) return undefined;
    const list = this.idle.get(key);
    if (list === undefined || list.length === 0) return undefined;
    let i = list.length - 1;
    if (prefer !== undefined && list[i]!.session !== prefer) {
      const at = list.findIndex((e) => e.session === prefer);
      if (at >= 0) i = at;
      else if (!prefer.socket.destroyed) this.growBehind(role, key, params);
    }
    while (list.length > 0) {
      const entry = list.splice(i, 1)[0]!;
      const session = entry.session;
      i = list.length - 1;
      if (list.length === 0) this.idle.delete(key);
      entry.revoke?.();
      session.sink = ignore;
      if (!session.socket.destroyed) return session;
      this.forget(role, session);
    }
    return undefined;
  }

  /**
   * Pooling by transaction: the client's own backend (the one it used last) serves another client
   * now, so it takes someone else's, and so will that one's client next: with fewer backends than
   * clients running transactions side by side, they all keep moving between backends, which costs
   * each transaction a few µs more of the process's and Postgres' CPU (measured: 8 clients of
   * pgbench -S on 7 backends, 0.81 of session mode's TPS). So one more is opened behind the
   * client's back and pooled, while a slot of the budget is free without closing anybody's and
   * the process keeps up (as in makeRoom): the pool grows to the clients that run at once, never
   * past the role's limit or the budget, and its sweep closes what stays idle.
   */
  private growBehind(role: string, key: string, params: Readonly<Record<string, string>>): void {
    const grow = this.opts.growAfterMs;
    if (grow === undefined || this.opening.has(role) || this.lateBy > grow || this.budget.pressed) return;
    if (this.atLimit(role) || !this.budget.take()) return;
    this.open(role, key, params).then(
      (session) => this.release(role, params, session, 'keep'),
      () => undefined, // open() has given its slot back; the next miss tries again
    );
  }

  /** The sessions open and not parked: handed out (or being reset). Read by the silence watch. */
  private handedOut(): Set<UpstreamSession> {
    const out = new Set(this.live);
    for (const list of this.idle.values()) for (const { session } of list) out.delete(session);
    return out;
  }

  /** An idle session with exactly these startup parameters (`prefer` if idle), or a new one once there is room. */
  acquire(role: string, params: Readonly<Record<string, string>>, prefer?: UpstreamSession): Promise<UpstreamSession> {
    const idle = this.takeIdle(role, params, prefer);
    if (idle) return Promise.resolve(idle);
    const key = this.key(role, params);
    const openNow = this.opts.growAfterMs === undefined || (this.inUse(role) === 0 && !this.opening.has(role));
    if (openNow && !this.waiting.has(role) && !this.atLimit(role) && this.budget.take()) return this.open(role, key, params);
    return this.wait(role, key, params);
  }

  /** The role's sessions handed out (not idle, not being opened): each comes back to the pool. */
  private inUse(role: string): number {
    let n = (this.count.get(role) ?? 0) - (this.opening.get(role) ?? 0);
    const prefix = role + '\0';
    for (const [key, list] of this.idle) if (key.startsWith(prefix)) n -= list.length;
    return n;
  }

  private async open(role: string, key: string, params: Readonly<Record<string, string>>): Promise<UpstreamSession> {
    this.count.set(role, (this.count.get(role) ?? 0) + 1);
    this.limits.opened(role);
    this.opening.set(role, (this.opening.get(role) ?? 0) + 1);
    try {
      const session = await openUpstreamSession(this.opts.target(role), params);
      if (this.greetings.size > 10_000) this.greetings.clear();
      this.greetings.set(key, session.parameters);
      if (this.silence) this.live.add(session);
      return session;
    } catch (err: unknown) {
      this.decrement(role);
      this.budget.give();
      throw err;
    } finally {
      const n = (this.opening.get(role) ?? 1) - 1;
      if (n <= 0) this.opening.delete(role);
      else this.opening.set(role, n);
      this.makeRoom(role); // the line may wait still (or the open failed): the next may go ahead
    }
  }

  /**
   * Waits in the role's line: for a session given back (handed straight over), or for room to
   * open one — under the role's limit (closing an idle session of the role's other settings) and
   * with a slot of the budget (the budget closes other roles' idle sessions). 53300 after `waitMs`.
   */
  private wait(role: string, key: string, params: Readonly<Record<string, string>>): Promise<UpstreamSession> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { key, params, started: performance.now(), resolve, reject, leaveBudget: undefined };
      let list = this.waiting.get(role);
      if (list === undefined) {
        this.waiting.set(role, (list = []));
        this.queuedSince.set(role, waiter.started);
        this.limits.lineStarted(role);
      }
      list.push(waiter);
      if (list.length > 1) return;
      this.expireAt(role, this.opts.waitMs);
      this.makeRoom(role);
    });
  }

  /** Gives `session`, handed straight over, to a waiter of the role. */
  private give(role: string, waiter: Waiter, session: UpstreamSession): void {
    this.leave(role, waiter);
    waiter.resolve(session);
  }

  /** Opens a session for a waiter: room was made for it (a budget slot is taken for it). */
  private openFor(role: string, waiter: Waiter): void {
    const opening = this.open(role, waiter.key, waiter.params); // counted before the next in line looks
    if (this.queuedSince.has(role)) this.queuedSince.set(role, performance.now());
    this.leave(role, waiter);
    opening.then(waiter.resolve, waiter.reject);
  }

  private leave(role: string, waiter: Waiter): void {
    this.waitTally?.observe((performance.now() - waiter.started) / 1000);
    waiter.leaveBudget?.();
    waiter.leaveBudget = undefined;
    const list = this.waiting.get(role);
    if (list === undefined) return;
    const i = list.indexOf(waiter);
    if (i >= 0) list.splice(i, 1);
    if (list.length > 0) {
      if (i === 0) this.makeRoom(role); // the next in line may go ahead
      return;
    }
    this.waiting.delete(role);
    this.queuedSince.delete(role);
    this.limits.lineEnded(role);
    const timer = this.lineTimers.get(role);
    if (timer !== undefined) {
      clearTimeout(timer);
      this.lineTimers.delete(role);
    }
  }

  /** Arms the role's line timer to look at its first waiter in `ms`. */
  private expireAt(role: string, ms: number): void {
    this.lineTimers.set(role, setTimeout(() => this.expire(role), Math.max(1, Math.ceil(ms))));
  }

  /** Fails the role's waiters whose time is up (the first ones: all wait `waitMs`), and looks again at the next one's deadline. */
  private expire(role: string): void {
    this.lineTimers.delete(role);
    const list = this.waiting.get(role);
    const waitMs = this.opts.waitMs;
    while (list !== undefined && list.length > 0) {
      const first = list[0]!;
      const left = waitMs - (performance.now() - first.started);
      if (left > 1) return this.expireAt(role, left);
      this.leave(role, first);
      first.reject(
        new PgError(SqlState.TooManyConnections, `too many connections for user "${this.limits.userOf(role)}": no upstream backend became free within ${waitMs} ms`, {
          hint: `every backend this user may hold (at most ${this.opts.maxPerRole}) or the service has stayed busy; retry, or keep transactions short`,
        }),
      );
    }
  }

  /**
   * Lets the role's first waiter open a session if there is room: under the role's limit (an idle
   * session of its other settings is closed for it; its slot comes back through `forget`, which
   * calls this again) and with a budget slot, or else a place in the budget's line.
   */
  private makeRoom(role: string): void {
    const first = this.waiting.get(role)?.[0];
    if (first === undefined || first.leaveBudget !== undefined) return;
    const grow = this.opts.growAfterMs;
    if (grow !== undefined) {
      // Sessions in use (or being opened) come back within a transaction's time: the first in
      // line waits that long for one before a session is opened for it. Each who waited that
      // long gets one (opened side by side): the pool grows as fast as the load needs. So does a
      // line that has had somebody in it for that long without a break (one more session each
      // time): clients whose transactions are short each wait less than that, but while the line
      // never empties every transaction costs a hand-over of a backend from one client to the
      // next, which doubles the CPU per transaction (8 pgbench clients left on one backend after
      // the pool had shrunk while idle: 5,800 TPS at 109 µs of CPU each, against 19,000 at 34 on
      // backends of their own). But a process whose looks come late (its event loop lags) is
      // held up by its own CPU, not by backends — another one would only add work to Postgres on
      // the same cores: the pool grows no further until the process catches up.
      const waited = performance.now() - Math.min(first.started, this.queuedSince.get(role)!);
      if ((waited < grow || this.lateBy > grow) && (this.inUse(role) > 0 || this.opening.has(role))) return this.lookAgain(role, waited < grow ? grow - waited : grow);
    }
    if (this.atLimit(role)) return void this.closeIdle(role);
    if (this.budget.take()) return this.openFor(role, first);
    if (grow !== undefined && this.inUse(role) > 0) {
      // The service's backends are all taken and this role's own come back soon. It does not
      // press the budget, which would close every backend other roles give back, only to open
      // them again (churn: a log-in and cold caches each); a backend of another role that has
      // stayed idle a while is closed for it.
      this.budget.reclaim(Date.now() - RECLAIM_IDLE_MS);
      if (this.budget.take()) return this.openFor(role, first);
      return this.lookAgain(role, Math.max(grow, 1));
    }
    first.leaveBudget = this.budget.wait(() => {
      first.leaveBudget = undefined;
      this.openFor(role, first);
    });
  }

  /** Looks at the role's line again in `ms` (once: a timer armed already stays). */
  private lookAgain(role: string, ms: number): void {
    if (this.growTimers.has(role)) return;
    const due = Date.now() + ms;
    const timer = setTimeout(() => {
      this.growTimers.delete(role);
      this.lateBy = Date.now() - due;
      this.makeRoom(role);
    }, ms);
    timer.unref();
    this.growTimers.set(role, timer);
  }

  /**
   * Closes the longest-idle session of the role's user (of the role itself with other start-up
   * settings — one with these would have been taken — or of another role of the same user),
   * making room for a new one; false when the user has no idle session.
   */
  private closeIdle(role: string): boolean {
    const user = this.limits.userOf(role);
    let oldest: { key: string; list: Idle[] } | undefined;
    for (const [key, list] of this.idle) {
      if (list.length === 0 || this.limits.userOf(roleOf(key)) !== user) continue;
      if (!oldest || list[0]!.since < oldest.list[0]!.since) oldest = { key, list };
    }
    if (!oldest) return false;
    const entry = oldest.list.shift()!;
    if (oldest.list.length === 0) this.idle.delete(oldest.key);
    entry.revoke?.();
    this.destroy(roleOf(oldest.key), entry.session);
    return true;
  }

  private oldestIdle(): { key: string; idle: Idle } | undefined {
    let oldest: { key: string; idle: Idle } | undefined;
    for (const [key, list] of this.idle) {
      const first = list[0];
      if (first !== undefined && (oldest === undefined || first.since < oldest.idle.since)) oldest = { key, idle: first };
    }
    return oldest;
  }

  private closeOldestIdle(): void {
    const oldest = this.oldestIdle();
    if (oldest === undefined) return;
    const list = this.idle.get(oldest.key)!;
    list.shift();
    if (list.length === 0) this.idle.delete(oldest.key);
    oldest.idle.revoke?.();
    this.destroy(roleOf(oldest.key), oldest.idle.session);
  }

  /**
   * Gives a session back. Only a session outside any transaction, with nothing in flight, may
   * be reused (`true` or `'keep'`; `'reset'` runs DISCARD ALL first, as every session of an
   * `eager` pool does); anything else is closed.
   */
  release(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession, how: Return | boolean): void {
    session.sink = ignore;
    session.onGone = ignore;
    const ret: Return = how === true ? 'keep' : how === false ? 'close' : how;
    if (ret === 'close' || this.closed || session.socket.destroyed || session.status !== 'I') return this.destroy(role, session);
    if (ret === 'reset' || this.opts.reset === 'eager') return this.discard(role, params, session);
    this.park(role, params, session);
  }

  /**
   * Pools a session whose holder keeps it until somebody else needs it (pooling by transaction, a
   * client between transactions): it is idle here like any other, and `revoke` is called, at once
   * and before anything else happens to it, when it goes to another request or is closed. Until
   * then its holder may take it back with `reclaim`, which costs neither of them the hand-over
   * (its listeners, its silence watch). False, and nothing done, when it cannot be pooled as it
   * is now (a request waits for a session, the budget is pressed, it is not idle): `release` it.
   */
  lend(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession, revoke: () => void): boolean {
    if (this.closed || this.budget.pressed || session.socket.destroyed || session.status !== 'I' || this.waiting.has(role) || this.otherWaits(role)) return false;
    session.sink = ignore;
    session.onGone = ignore;
    this.park(role, params, session, revoke);
    return true;
  }

  /** Takes back a session lent by `lend`; false when it is gone to another request or closed (its `revoke` has run). */
  reclaim(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession): boolean {
    const key = this.key(role, params);
    const list = this.idle.get(key);
    if (list === undefined) return false;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]!.session !== session) continue;
      if (i === list.length - 1) list.pop();
      else list.splice(i, 1);
      if (list.length === 0) this.idle.delete(key);
      if (session.socket.destroyed) {
        this.forget(role, session);
        return false;
      }
      return true;
    }
    return false;
  }

  /** DISCARD ALL, then pooled; closed if it fails. */
  private discard(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession): void {
    const socket = session.socket;
    let ok = true;
    const onData = (chunk: Buffer) => {
      try {
        session.reader.push(chunk, (code, frame) => {
          if (code === BackendCode.ErrorResponse) ok = false;
          if (code === BackendCode.ParameterStatus) noteParameterStatus(session, frame);
          if (code !== BackendCode.ReadyForQuery) return;
          session.status = decodeReadyForQuery(frame);
          socket.off('data', onData);
          socket.off('close', onClose);
          if (!ok || session.status !== 'I') return this.destroy(role, session);
          this.park(role, params, session);
        });
      } catch {
        this.destroy(role, session);
      }
    };
    const onClose = () => this.forget(role, session);
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.write(DISCARD);
  }

  /** Hands the session to the role's longest waiter with the same settings, or pools it (closes it if another role waits for its slot). */
  private park(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession, revoke?: () => void): void {
    const key = this.key(role, params);
    const waiters = this.waiting.get(role);
    if (waiters !== undefined) for (const waiter of waiters) if (waiter.key === key) return this.give(role, waiter, session);
    // Its room goes to a waiter: of another settings, of another role, or of another role of its user at the user's limit.
    if (waiters !== undefined || this.budget.pressed || this.otherWaits(role)) return this.destroy(role, session);
    const list = this.idle.get(key) ?? [];
    // A parked session has nothing to say; anything it sends is its backend going away (a FATAL
    // from pg_terminate_backend or a shutdown arrives before the connection closes). Closing it at
    // once keeps the next client from being handed a session that is already dead.
    session.sink = closeOnData;
    list.push({ session, since: Date.now(), revoke });
    this.idle.set(key, list);
  }

  private destroy(role: string, session: UpstreamSession): void {
    if (!session.socket.destroyed) {
      session.socket.end(buildTerminate());
      session.socket.destroy();
    }
    this.forget(role, session);
  }

  /** Stops counting `session` against its role and the budget (once, however many paths report it gone). */
  private forget(role: string, session: UpstreamSession): void {
    if (this.gone.has(session)) return;
    this.gone.add(session);
    this.live.delete(session);
    this.decrement(role);
    this.budget.give();
    this.makeRoom(role);
    // The user's other roles waiting at its limit may go ahead now.
    if (this.otherWaits(role)) {
      const user = this.limits.userOf(role);
      for (const other of [...this.waiting.keys()]) if (other !== role && this.limits.userOf(other) === user) this.makeRoom(other);
    }
  }

  private decrement(role: string): void {
    const n = (this.count.get(role) ?? 1) - 1;
    if (n <= 0) this.count.delete(role);
    else this.count.set(role, n);
    this.limits.closed(role);
  }

  private sweep(): void {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const [key, list] of this.idle) {
      const keep = list.filter((i) => {
        if (i.since >= cutoff && !i.session.socket.destroyed) return true;
        i.revoke?.();
        this.destroy(roleOf(key), i.session);
        return false;
      });
      if (keep.length) this.idle.set(key, keep);
      else this.idle.delete(key);
    }
  }

  /** Closes every idle session; sessions in use close when released. */
  close(): void {
    this.closed = true;
    this.unwatch?.();
    this.unregister();
    this.silence?.close();
    clearInterval(this.sweeper);
    for (const timer of this.growTimers.values()) clearTimeout(timer);
    this.growTimers.clear();
    for (const [key, list] of this.idle) {
      for (const i of list) {
        i.revoke?.();
        this.destroy(roleOf(key), i.session);
      }
    }
    this.idle.clear();
  }
}

/** The sink of a pooled session (called as its method): what it sends is its backend going away. */
function closeOnData(this: UpstreamSession): void {
  this.socket.destroy();
}

function roleOf(key: string): string {
  return key.slice(0, key.indexOf('\0'));
}

/** A session pool logging in to `cluster` as each user's own role (its derived password, its TLS). */
export function sessionPoolFor(cluster: Pick<Cluster, 'roleConnection'>, opts: Omit<SessionPoolOptions, 'target'>): SessionPool {
  return new SessionPool({
    ...opts,
    target: (role) => {
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
    },
  });
}
