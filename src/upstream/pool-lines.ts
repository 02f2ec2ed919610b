/**
 * A session pool's lines: per role, the requests that found no idle session and wait for one to
 * be given back (handed straight over) or for room to open one — under the role's limit and
 * with a slot of the budget — and fail with 53300 after `waitMs`. Pooling by transaction
 * (`growAfterMs`), a line waits a transaction's time for a backend to come back before one is
 * opened for it (see `makeRoom`).
 */
import { PgError, SqlState } from '../shared/errors.js';
import type { HistogramTally } from '../observe/metrics.js';
import type { BackendBudget } from './budget.js';
import type { UpstreamSession } from './session.js';
import type { SessionCounts } from './session-counts.js';

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

/** Pooling by transaction, budget full: how long another role's backend stays idle before it is closed for a role that waits. */
const RECLAIM_IDLE_MS = 1_000;

/** What the lines need of their pool. */
export interface LineHost {
  readonly maxPerRole: number;
  /** How long a request waits before 53300. */
  readonly waitMs: number;
  /** Pooling by transaction: how long the first in line waits for a backend to come back before one is opened for it. */
  readonly growAfterMs: number | undefined;
  readonly budget: BackendBudget;
  readonly waitTally: HistogramTally | undefined;
  /** Sessions per role and per user: the user's limit (its own role's and its keys' roles' together), and its roles with a line. */
  readonly counts: SessionCounts;
  /** Whether a session of the role is being opened. */
  opening(role: string): boolean;
  /** The role's sessions handed out (not idle, not being opened). */
  inUse(role: string): number;
  /** Opens a session of the role, a budget slot taken for it. */
  open(role: string, key: string, params: Readonly<Record<string, string>>): Promise<UpstreamSession>;
  /** Closes the longest-idle session of the role's user (its room comes back through `makeRoom`); false when it has none. */
  closeIdle(role: string): boolean;
  /** The user whose share of the budget the role's sessions are. */
  userOf(role: string): string;
}

export class PoolLines {
  private readonly waiting = new Map<string, Waiter[]>();
  /**
   * Per role with a line, since when it has had somebody in it without a break — or since a
   * session was last opened for it, whichever came later (see `makeRoom`).
   */
  private readonly queuedSince = new Map<string, number>();
  /** Per role with a line, the timer that fails its first waiter at its deadline (53300 after `waitMs`). */
  private readonly lineTimers = new Map<string, NodeJS.Timeout>();
  /** Per role, the timer that looks at its line again once its first has waited `growAfterMs`. */
  private readonly growTimers = new Map<string, NodeJS.Timeout>();
  /** How late (ms) the latest of those looks came: the process's event loop was that busy. */
  lateBy = 0;

  constructor(private readonly host: LineHost) {}

  /** Whether any role has a line (a client's every transaction asks: no look-up per role when none has). */
  get any(): boolean {
    return this.waiting.size > 0;
  }

  /** Whether the role has a line. */
  has(role: string): boolean {
    return this.waiting.has(role);
  }

  /** The roles with a line. */
  roles(): IterableIterator<string> {
    return this.waiting.keys();
  }

  /** Requests waiting, every role together. */
  get size(): number {
    let n = 0;
    for (const list of this.waiting.values()) n += list.length;
    return n;
  }

  /** Hands `session` to the role's longest waiter for `key`; false when none waits for one. */
  handOver(role: string, key: string, session: UpstreamSession): boolean {
    const waiters = this.waiting.get(role);
    if (waiters !== undefined) {
      for (const waiter of waiters) {
        if (waiter.key !== key) continue;
        this.give(role, waiter, session);
        return true;
      }
    }
    return false;
  }

  close(): void {
    for (const timer of this.growTimers.values()) clearTimeout(timer);
    this.growTimers.clear();
  }

  /**
   * Waits in the role's line: for a session given back (handed straight over), or for room to
   * open one — under the role's limit (closing an idle session of the role's other settings) and
   * with a slot of the budget (the budget closes other roles' idle sessions). 53300 after `waitMs`.
   */
  wait(role: string, key: string, params: Readonly<Record<string, string>>): Promise<UpstreamSession> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { key, params, started: performance.now(), resolve, reject, leaveBudget: undefined };
      let list = this.waiting.get(role);
      if (list === undefined) {
        this.waiting.set(role, (list = []));
        this.host.counts.lineStarted(role);
        this.queuedSince.set(role, waiter.started);
      }
      list.push(waiter);
      if (list.length > 1) return;
      this.expireAt(role, this.host.waitMs);
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
    const opening = this.host.open(role, waiter.key, waiter.params); // counted before the next in line looks
    if (this.queuedSince.has(role)) this.queuedSince.set(role, performance.now());
    this.leave(role, waiter);
    opening.then(waiter.resolve, waiter.reject);
  }

  private leave(role: string, waiter: Waiter): void {
    this.host.waitTally?.observe((performance.now() - waiter.started) / 1000);
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
    this.host.counts.lineEnded(role);
    this.queuedSince.delete(role);
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
    const waitMs = this.host.waitMs;
    while (list !== undefined && list.length > 0) {
      const first = list[0]!;
      const left = waitMs - (performance.now() - first.started);
      if (left > 1) return this.expireAt(role, left);
      this.leave(role, first);
      first.reject(
        new PgError(SqlState.TooManyConnections, `too many connections for user "${this.host.userOf(role)}": no upstream backend became free within ${waitMs} ms`, {
          hint: `every backend this user may hold (at most ${this.host.maxPerRole}) or the service has stayed busy; retry, or keep transactions short`,
        }),
      );
    }
  }

  /**
   * Lets the role's first waiter open a session if there is room: under the role's limit (an idle
   * session of its other settings is closed for it; its slot comes back through `forget`, which
   * calls this again) and with a budget slot, or else a place in the budget's line.
   */
  makeRoom(role: string): void {
    const first = this.waiting.get(role)?.[0];
    if (first === undefined || first.leaveBudget !== undefined) return;
    const grow = this.host.growAfterMs;
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
      if ((waited < grow || this.lateBy > grow) && (this.host.inUse(role) > 0 || this.host.opening(role))) return this.lookAgain(role, waited < grow ? grow - waited : grow);
    }
    if (this.host.counts.atLimit(role)) return void this.host.closeIdle(role);
    if (this.host.budget.take(this.host.userOf(role))) return this.openFor(role, first);
    if (grow !== undefined && this.host.inUse(role) > 0) {
      // The service's backends are all taken and this role's own come back soon. It does not
      // press the budget, which would close every backend other roles give back, only to open
      // them again (churn: a log-in and cold caches each); a backend of another role that has
      // stayed idle a while is closed for it.
      this.host.budget.reclaim(Date.now() - RECLAIM_IDLE_MS);
      if (this.host.budget.take(this.host.userOf(role))) return this.openFor(role, first);
      return this.lookAgain(role, Math.max(grow, 1));
    }
    first.leaveBudget = this.host.budget.wait(() => {
      first.leaveBudget = undefined;
      this.openFor(role, first);
    }, this.host.userOf(role));
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
}
