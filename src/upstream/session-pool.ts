/**
 * Upstream sessions per (role, start-up parameters), handed out and taken back: the wire front
 * end's backends (each held by a client for one transaction, or for its whole session in session
 * mode) and the REST API's (one statement each). Every role keeps its own sessions: a session is
 * only ever handed to a user of the role it logged in as.
 *
 * - **Turns.** With an `admission`, a session is handed out only with a slot of it (the
 *   process's fair queue, shared with the other pools: admission.ts), given back with the session.
 * - **Affinity.** `takeIdle` gives a caller the session it names (the one it used last) when that
 *   one is idle, else the most recently used: a client that comes back finds its own backend.
 * - **Limits.** At most `maxPerRole` sessions per user — a user's own role and the roles of its
 *   scoped keys (`<user>#<key id>`) together (session-counts.ts) — and every session holds a slot
 *   of the process's `BackendBudget`, shared with the other pools. A request past either limit
 *   waits in its role's line (pool-lines.ts); a session given back goes straight to the longest
 *   waiter of its role, idle sessions of other roles are closed for a role that waits for a slot
 *   (those of the same user first, when the user is at its limit), and past `waitMs` the request
 *   fails with 53300.
 * - **Size follows load.** A session opens only when a request finds none idle, and closes after
 *   `idleMs` idle (or at once, when another role waits for its slot).
 */
import { buildTerminate } from '../protocol/index.js';
import type { Admission } from './admission.js';
import { roleTarget, type Cluster } from './cluster.js';
import { BackendBudget } from './budget.js';
import { poolWaitTally, watchPool, type HistogramTally } from '../observe/metrics.js';
import { Greetings } from './greetings.js';
import { IdleSessions } from './idle-sessions.js';
import { PoolKeys, roleOf, rolePrefix } from './pool-keys.js';
import { PoolLines, type LineHost } from './pool-lines.js';
import { ignore, openUpstreamSession, type SessionDone, type UpstreamSession } from './session.js';
import { discardAll } from './session-reset.js';
import { SilenceWatch } from './silence-watch.js';
import type { SessionPoolOptions } from './session-pool-options.js';
import { SessionCounts } from './session-counts.js';
export type { SessionPoolOptions };

/** How a session comes back: reusable as it is, reusable after DISCARD ALL, or to be closed. */
export type Return = 'keep' | 'reset' | 'close';

export class SessionPool implements LineHost {
  private readonly idle = new IdleSessions();
  private readonly keys = new PoolKeys();
  private readonly lines: PoolLines;
  /** Sessions per role and per user (`maxPerRole` per user: its own role's and its keys' roles' together). */
  readonly counts: SessionCounts;
  private readonly gone = new WeakSet<UpstreamSession>();
  /** Watches the handed-out sessions for silence when `silenceMs` is set. */
  private readonly silence: SilenceWatch | undefined;
  /** Every session open (handed out or parked), from its login until it is gone; kept for the silence watch only. */
  private readonly live = new Set<UpstreamSession>();
  readonly waitTally: HistogramTally | undefined;
  /** Per role whose login settings changed, how many times: its sessions of an older generation are not reused. */
  private readonly generations = new Map<string, number>();
  /** ParameterStatus values of the latest login per key: what a client is greeted with before it has a session. */
  private readonly greetings = new Greetings();
  readonly budget: BackendBudget;
  private readonly admission: Admission | undefined;
  private readonly sweeper: NodeJS.Timeout;
  private readonly unregister: () => void;
  private readonly unwatch: (() => void) | undefined;
  private closed = false;

  constructor(private readonly opts: SessionPoolOptions) {
    this.budget = opts.budget ?? new BackendBudget(Number.MAX_SAFE_INTEGER);
    this.counts = new SessionCounts(opts.maxPerRole);
    this.admission = opts.admission;
    this.lines = new PoolLines(this);
    this.unregister = this.budget.register({ oldestIdle: (of) => this.idle.oldest(undefined, this.keysOf(of))?.idle.since, closeOldestIdle: (of) => this.closeOldestIdle(of) });
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(opts.idleMs, 10_000)));
    this.sweeper.unref();
    if (opts.metricsName) this.unwatch = watchPool(opts.metricsName, () => this.states());
    this.waitTally = opts.metricsName ? poolWaitTally(opts.metricsName) : undefined;
    if (opts.silenceMs) this.silence = new SilenceWatch(opts.silenceMs, () => this.handedOut());
  }

  get maxPerRole(): number {
    return this.opts.maxPerRole;
  }

  get waitMs(): number {
    return this.opts.waitMs;
  }

  get growAfterMs(): number | undefined {
    return this.opts.growAfterMs;
  }

  opening(role: string): boolean {
    return this.counts.opening(role) > 0;
  }

  /** Sessions handed out (or opening), pooled, and acquires waiting for room: read when the metrics are scraped. */
  private states(): { active: number; idle: number; waiting: number } {
    const total = this.counts.total;
    const idle = this.idle.size;
    return { active: total - idle, idle, waiting: this.lines.size };
  }

  /**
   * The ParameterStatus values a session with these parameters has at login: what a client is
   * greeted with before it holds a session. Learnt once per key from a real login (the session is
   * then pooled); concurrent first logins wait for that one instead of each opening a session.
   */
  greeting(role: string, params: Readonly<Record<string, string>>): ReadonlyMap<string, string> | Promise<ReadonlyMap<string, string>> {
    const key = this.keys.key(role, params);
    return this.greetings.get(key) ?? this.greetings.learn(key, () => this.acquire(role, params).then((session) => {
      this.release(role, params, session, 'keep');
      return session.parameters;
    }));
  }

  /**
   * An idle session with exactly these startup parameters, if there is one and the user may run
   * a transaction now (no wait): `prefer` if it is idle, else the one used last. Waiting requests
   * of the role come first.
   */
  takeIdle(role: string, params: Readonly<Record<string, string>>, prefer?: UpstreamSession): UpstreamSession | undefined {
    const key = this.keys.key(role, params);
    if (this.lines.has(role) || !this.idle.has(key)) return undefined;
    const admission = this.admission;
    if (admission === undefined) return this.takeIdleSession(role, key, params, prefer);
    const turn = admission.enter(this.userOf(role));
    if (turn === undefined) return undefined;
    const session = this.takeIdleSession(role, key, params, prefer);
    if (session === undefined) admission.cancel(turn);
    else admission.hold(turn, session.hold);
    return session;
  }

  /** The user whose turn and share of the budget the role's sessions are (a scoped key's role: its user). */
  userOf(role: string): string {
    return this.opts.userOf === undefined ? this.counts.userOf(role) : this.opts.userOf(role);
  }

  /** Whether the role has a line, or another role of its user has one (for a session of the user's share). */
  private waits(role: string): boolean {
    return this.lines.any && (this.lines.has(role) || this.otherWaits(role));
  }

  /** Whether another role of the same user waits in a line (for a session of this user's share). */
  private otherWaits(role: string): boolean {
    return this.counts.otherWaits(role, this.lines.has(role));
  }

  /** An idle session of `key` (no turn taken): `prefer`, else the one used last; one of an older generation is closed and passed over. */
  private takeIdleSession(role: string, key: string, params: Readonly<Record<string, string>>, prefer: UpstreamSession | undefined): UpstreamSession | undefined {
    for (;;) {
      const session = this.idle.take(key, prefer, (dead) => this.forget(role, dead));
      if (this.idle.preferMissing && prefer !== undefined && !prefer.socket.destroyed) this.growBehind(role, key, params);
      if (session === undefined || this.current(role, session)) return session;
      this.destroy(role, session);
    }
  }

  /** Whether the session logged in with its role's current login settings (see `renew`). */
  private current(role: string, session: UpstreamSession): boolean {
    return this.generations.size === 0 || session.generation === (this.generations.get(role) ?? 0);
  }

  /**
   * The role's login settings changed (its user's statement timeout): its idle sessions are
   * closed now, and those handed out when they come back, so that every transaction from now on
   * runs on a session logged in with the new ones.
   */
  renew(role: string): void {
    this.generations.set(role, (this.generations.get(role) ?? 0) + 1);
    for (let oldest = this.idle.takeOldest(rolePrefix(role)); oldest !== undefined; oldest = this.idle.takeOldest(rolePrefix(role))) this.destroy(role, oldest.idle.session);
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
    if (grow === undefined || this.opening(role) || this.lines.lateBy > grow || this.budget.pressed) return;
    if (this.counts.atLimit(role) || !this.budget.take(this.userOf(role))) return;
    this.open(role, key, params).then(
      (session) => this.release(role, params, session, 'keep'),
      () => undefined, // open() has given its slot back; the next miss tries again
    );
  }

  /** The sessions open and not parked: handed out (or being reset). Read by the silence watch. */
  private handedOut(): Set<UpstreamSession> {
    const out = new Set(this.live);
    for (const session of this.idle.sessions()) out.delete(session);
    return out;
  }

  /** An idle session with exactly these startup parameters (`prefer` if idle), or a new one once there is room — after the user's turn. */
  acquire(role: string, params: Readonly<Record<string, string>>, prefer?: UpstreamSession): Promise<UpstreamSession> {
    return new Promise((resolve, reject) => this.acquireThen(role, params, prefer, (err, session) => (session === undefined ? reject(err) : resolve(session))));
  }

  /** `acquire` with a callback (called at once when a session is idle): wire clients that outnumber the turns wait for every transaction, and a promise chain per wait cost them CPU. */
  acquireThen(role: string, params: Readonly<Record<string, string>>, prefer: UpstreamSession | undefined, done: SessionDone): void {
    const idle = this.takeIdle(role, params, prefer);
    if (idle) return done(undefined, idle);
    const admission = this.admission;
    if (admission === undefined) return this.session(role, params, prefer, done);
    const user = this.userOf(role);
    const turn = admission.enter(user);
    if (turn !== undefined) return this.session(role, params, prefer, admission.holding(turn, done));
    admission.waitFor(user, this.opts.waitMs, (err, t) => (t === undefined ? done(err) : this.session(role, params, prefer, admission.holding(t, done))));
  }

  /** A session for a request whose turn it is: idle, else opened, else once there is room. */
  private session(role: string, params: Readonly<Record<string, string>>, prefer: UpstreamSession | undefined, done: SessionDone): void {
    const key = this.keys.key(role, params);
    if (!this.lines.has(role)) {
      const idle = this.takeIdleSession(role, key, params, prefer);
      if (idle) return done(undefined, idle);
    }
    const openNow = this.opts.growAfterMs === undefined || (this.inUse(role) === 0 && !this.opening(role));
    const waited = openNow && !this.lines.has(role) && !this.counts.atLimit(role) && this.budget.take(this.userOf(role)) ? this.open(role, key, params) : this.lines.wait(role, key, params);
    waited.then((session) => done(undefined, session), done);
  }

  /** The role's sessions handed out (not idle, not being opened): each comes back to the pool. */
  inUse(role: string): number {
    return this.counts.of(role) - this.counts.opening(role) - this.idle.countOf(rolePrefix(role));
  }

  async open(role: string, key: string, params: Readonly<Record<string, string>>): Promise<UpstreamSession> {
    this.counts.openingStarted(role);
    const generation = this.generations.get(role) ?? 0;
    try {
      const session = await openUpstreamSession(this.opts.target(role), params);
      session.generation = generation;
      this.opts.onOpened?.(session);
      this.greetings.set(key, session.parameters);
      if (this.silence) this.live.add(session);
      return session;
    } catch (err: unknown) {
      this.counts.closed(role);
      this.budget.give(this.userOf(role));
      throw err;
    } finally {
      this.counts.openingEnded(role);
      this.lines.makeRoom(role); // the line may wait still (or the open failed): the next may go ahead
    }
  }

  /**
   * Closes the longest-idle session of the role's user — of the role's other start-up settings
   * (one with these would have been taken), or of the user's other roles (its keys') — making
   * room for a new one; false when the user has no idle session.
   */
  closeIdle(role: string): boolean {
    const user = this.userOf(role);
    const oldest = this.idle.takeOldest(undefined, (key) => this.userOf(roleOf(key)) === user);
    if (oldest === undefined) return false;
    this.destroy(roleOf(oldest.key), oldest.idle.session);
    return true;
  }

  private closeOldestIdle(of?: (user: string) => boolean): void {
    const oldest = this.idle.takeOldest(undefined, this.keysOf(of));
    if (oldest !== undefined) this.destroy(roleOf(oldest.key), oldest.idle.session);
  }

  /** The keys of the users `of` accepts. */
  private keysOf(of: ((user: string) => boolean) | undefined): ((key: string) => boolean) | undefined {
    return of === undefined ? undefined : (key) => of(this.userOf(roleOf(key)));
  }

  /**
   * Gives a session back, and its turn. Only a session outside any transaction, with nothing in
   * flight, may be reused (`true` or `'keep'`; `'reset'` runs DISCARD ALL first, as every session
   * of an `eager` pool does); anything else is closed.
   */
  release(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession, how: Return | boolean): void {
    session.sink = ignore;
    session.onGone = ignore;
    this.admission?.leave(session.hold);
    const ret: Return = how === true ? 'keep' : how === false ? 'close' : how;
    if (ret === 'close' || this.closed || session.socket.destroyed || session.status !== 'I' || !this.current(role, session)) return this.destroy(role, session);
    if (ret === 'reset' || this.opts.reset === 'eager') return this.discard(role, params, session);
    this.park(role, params, session);
  }

  /**
   * Pools a session whose holder keeps it until somebody else needs it (pooling by transaction, a
   * client between transactions): it is idle here like any other, its turn given back, and
   * `revoke` is called, at once and before anything else happens to it, when it goes to another
   * request or is closed. Until then its holder may take it back with `reclaim`, which costs
   * neither of them the hand-over (its listeners, its silence watch). False, and nothing done,
   * when it cannot be pooled as it is now (a request waits for a session, the budget is pressed,
   * it is not idle, its login settings are old): `release` it.
   */
  lend(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession, revoke: () => void): boolean {
    if (this.closed || this.budget.pressed || session.socket.destroyed || session.status !== 'I' || this.waits(role) || !this.current(role, session)) return false;
    session.sink = ignore;
    session.onGone = ignore;
    this.admission?.leave(session.hold);
    this.park(role, params, session, revoke);
    return true;
  }

  /**
   * Takes back a session lent by `lend`, with a turn; false when it is gone to another request or
   * closed (its `revoke` has run), or when the user must wait for their turn (it stays lent).
   */
  reclaim(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession): boolean {
    const turn = this.admission?.enter(this.userOf(role));
    if (this.admission !== undefined && turn === undefined) return false;
    if (!this.idle.remove(this.keys.key(role, params), session) || session.socket.destroyed) {
      if (turn !== undefined) this.admission!.cancel(turn);
      if (session.socket.destroyed) this.forget(role, session);
      return false;
    }
    if (turn !== undefined) this.admission!.hold(turn, session.hold);
    return true;
  }

  /** DISCARD ALL, then pooled; closed if it fails. */
  private discard(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession): void {
    discardAll(
      session,
      (ok) => (ok ? this.park(role, params, session) : this.destroy(role, session)),
      () => this.forget(role, session),
    );
  }

  /** Hands the session to the role's longest waiter with the same settings, or pools it (closes it if another role waits for its slot). */
  private park(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession, revoke?: () => void): void {
    const key = this.keys.key(role, params);
    if (this.lines.any && this.lines.handOver(role, key, session)) return;
    // Its room goes to a waiter: of the role's other settings, or of another role of its user at the user's limit.
    if (this.budget.pressed || this.waits(role)) return this.destroy(role, session);
    // A parked session has nothing to say; anything it sends is its backend going away (a FATAL
    // from pg_terminate_backend or a shutdown arrives before the connection closes). Closing it at
    // once keeps the next client from being handed a session that is already dead.
    session.sink = closeOnData;
    this.idle.put(key, { session, since: Date.now(), revoke });
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
    this.counts.closed(role);
    this.budget.give(this.userOf(role));
    this.lines.makeRoom(role);
    // The user's other roles waiting at its limit may go ahead now.
    if (this.otherWaits(role)) {
      const user = this.userOf(role);
      for (const other of [...this.lines.roles()]) if (other !== role && this.userOf(other) === user) this.lines.makeRoom(other);
    }
  }

  private sweep(): void {
    this.idle.sweep(Date.now() - this.opts.idleMs, (key, session) => this.destroy(roleOf(key), session));
  }

  /** Closes every idle session; sessions in use close when released. */
  close(): void {
    this.closed = true;
    this.unwatch?.();
    this.unregister();
    this.silence?.close();
    clearInterval(this.sweeper);
    this.lines.close();
    this.idle.drain((key, session) => this.destroy(roleOf(key), session));
  }
}

/** The sink of a pooled session (called as its method): what it sends is its backend going away. */
function closeOnData(this: UpstreamSession): void {
  this.socket.destroy();
}

/** A session pool logging in to `cluster` as each user's own role (its derived password, its TLS), with the settings `settingsOf` gives the role. */
export function sessionPoolFor(cluster: Pick<Cluster, 'roleConnection' | 'weight'>, opts: Omit<SessionPoolOptions, 'target'> & { settingsOf?(role: string): Readonly<Record<string, string>> }): SessionPool {
  const weight = cluster.weight;
  return new SessionPool({
    ...opts,
    target: (role) => ({ ...roleTarget(cluster, role), settings: opts.settingsOf?.(role) }),
    ...(weight && { onOpened: (session: UpstreamSession) => weight.backendOpened(session.processId) }),
  });
}
