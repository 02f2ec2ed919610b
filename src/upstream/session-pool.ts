/**
 * Upstream sessions per (role, startup parameters), reused across client connections after
 * `DISCARD ALL` — session pooling, as PgBouncer's session mode: a client holds one upstream
 * session from login to disconnect. Idle sessions close after `idleMs`.
 */
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { BackendCode, buildQuery, buildTerminate, decodeReadyForQuery } from '../protocol/index.js';
import type { Cluster } from './cluster.js';
import { timePoolWait, watchPool } from '../observe/metrics.js';
import { noteParameterStatus, openUpstreamSession, type UpstreamSession, type UpstreamTarget } from './session.js';
import { SilenceWatch } from './silence-watch.js';

interface Idle {
  session: UpstreamSession;
  since: number;
  /** Listens while the session is parked (see `park`); removed when it is handed out. */
  onStray: () => void;
}

export interface SessionPoolOptions {
  /** Login settings of a role's upstream session. */
  target(role: string): UpstreamTarget;
  /** Sessions per role, busy and idle together. */
  maxPerRole: number;
  idleMs: number;
  /**
   * `eager`: a released session runs DISCARD ALL before it is pooled (the wire relay hands the
   * socket to a client as is). `lazy`: it is pooled at once as its user left it, and its next
   * user resets it in the same round trip as its own statement when it is marked `needsReset`
   * (the REST API: every statement marks it, and one the policy found setting-free clears the
   * mark again, see query-run.ts).
   */
  reset: 'eager' | 'lazy';
  /** How long `acquire` waits for a session when the role has `maxPerRole` busy. */
  waitMs: number;
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
  log: Logger;
}

const DISCARD = buildQuery('DISCARD ALL');

export class SessionPool {
  private readonly idle = new Map<string, Idle[]>();
  private readonly count = new Map<string, number>();
  private readonly gone = new WeakSet<UpstreamSession>();
  /** Watches the handed-out sessions for silence when `silenceMs` is set. */
  private readonly silence: SilenceWatch | undefined;
  /** Every session open (handed out or parked), from its login until it is gone; kept for the silence watch only. */
  private readonly live = new Set<UpstreamSession>();
  private readonly waiting = new Map<string, (() => void)[]>();
  /** ParameterStatus values of the latest login per key: what a client is greeted with before it has a session. */
  private readonly greetings = new Map<string, ReadonlyMap<string, string>>();
  private readonly learning = new Map<string, Promise<ReadonlyMap<string, string>>>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly opts: SessionPoolOptions) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.min(opts.idleMs, 10_000)));
    this.sweeper.unref();
    if (opts.metricsName) this.unwatch = watchPool(opts.metricsName, () => this.states());
    if (opts.silenceMs) this.silence = new SilenceWatch(opts.silenceMs, () => this.handedOut());
  }

  private readonly unwatch: (() => void) | undefined;

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

  private key(role: string, params: Readonly<Record<string, string>>): string {
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
          this.release(role, params, session, true);
          return session.parameters;
        })
        .finally(() => this.learning.delete(key));
      this.learning.set(key, learning);
    }
    return learning;
  }

  /** An idle session with exactly these startup parameters, if there is one (no wait). */
  takeIdle(role: string, params: Readonly<Record<string, string>>): UpstreamSession | undefined {
    const list = this.idle.get(this.key(role, params));
    while (list && list.length > 0) {
      const { session, onStray } = list.pop()!;
      session.socket.off('data', onStray);
      if (!session.socket.destroyed) return session;
      this.forget(role, session);
    }
    return undefined;
  }

  /** The sessions open and not parked: handed out (or, in an `eager` pool, being reset). Read by the silence watch. */
  private handedOut(): UpstreamSession[] {
    const parked = new Set<UpstreamSession>();
    for (const list of this.idle.values()) for (const { session } of list) parked.add(session);
    return [...this.live].filter((s) => !parked.has(s));
  }

  /** An idle session with exactly these startup parameters, or a new one. */
  async acquire(role: string, params: Readonly<Record<string, string>>): Promise<UpstreamSession> {
    const idle = this.takeIdle(role, params);
    if (idle) return idle;
    const key = this.key(role, params);
    const n = this.count.get(role) ?? 0;
    if (n >= this.opts.maxPerRole) {
      if (!this.closeIdle(role)) await this.waitForRoom(role);
      return this.acquire(role, params);
    }
    this.count.set(role, n + 1);
    try {
      const session = await openUpstreamSession(this.opts.target(role), params);
      if (this.greetings.size > 10_000) this.greetings.clear();
      this.greetings.set(key, session.parameters);
      if (this.silence) this.live.add(session);
      return session;
    } catch (err: unknown) {
      this.decrement(role);
      throw err;
    }
  }

  /**
   * Closes the role's longest-idle session (it has other start-up settings: one with these would
   * have been taken), making room for a new one; false when the role has no idle session. Idle
   * sessions of one set of settings must not keep a client with other settings waiting.
   */
  private closeIdle(role: string): boolean {
    const prefix = role + '\0';
    let oldest: { key: string; list: Idle[] } | undefined;
    for (const [key, list] of this.idle) {
      if (!key.startsWith(prefix) || list.length === 0) continue;
      if (!oldest || list[0]!.since < oldest.list[0]!.since) oldest = { key, list };
    }
    if (!oldest) return false;
    const { session } = oldest.list.shift()!;
    if (oldest.list.length === 0) this.idle.delete(oldest.key);
    this.destroy(role, session);
    return true;
  }

  /** Resolves when a session of `role` is released or closed; 53300 after `waitMs`. */
  private waitForRoom(role: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(role) ?? [];
      const waited = this.opts.metricsName ? timePoolWait(this.opts.metricsName) : undefined;
      const waiter = () => {
        waited?.();
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const i = list.indexOf(waiter);
        if (i >= 0) list.splice(i, 1);
        waited?.();
        reject(
          new PgError(SqlState.TooManyConnections, `too many connections for user "${role}" (at most ${this.opts.maxPerRole} at once)`, {
            hint: 'every upstream session of this user stayed busy; close idle connections, or raise the per-user limit',
          }),
        );
      }, this.opts.waitMs);
      list.push(waiter);
      this.waiting.set(role, list);
    });
  }

  /** Lets the longest-waiting `acquire` of `role` try again. */
  private room(role: string): void {
    const list = this.waiting.get(role);
    const next = list?.shift();
    if (list && list.length === 0) this.waiting.delete(role);
    next?.();
  }

  /**
   * Gives a session back. Only a session outside any transaction, with nothing in flight, may
   * be reused; it is reset with DISCARD ALL first. Anything else is closed.
   */
  release(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession, clean: boolean): void {
    if (!clean || this.closed || session.socket.destroyed || session.status !== 'I') {
      this.destroy(role, session);
      return;
    }
    if (this.opts.reset === 'lazy') {
      this.park(role, params, session);
      return;
    }
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

  private park(role: string, params: Readonly<Record<string, string>>, session: UpstreamSession): void {
    const key = this.key(role, params);
    const list = this.idle.get(key) ?? [];
    // A parked session has nothing to say; anything it sends is its backend going away (a FATAL
    // from pg_terminate_backend or a shutdown arrives before the connection closes). Closing it at
    // once keeps the next client from being handed a session that is already dead.
    const onStray = () => session.socket.destroy();
    session.socket.on('data', onStray);
    list.push({ session, since: Date.now(), onStray });
    this.idle.set(key, list);
    this.room(role);
  }

  private destroy(role: string, session: UpstreamSession): void {
    if (!session.socket.destroyed) {
      session.socket.end(buildTerminate());
      session.socket.destroy();
    }
    this.forget(role, session);
  }

  /** Stops counting `session` against its role (once, however many paths report it gone). */
  private forget(role: string, session: UpstreamSession): void {
    if (this.gone.has(session)) return;
    this.gone.add(session);
    this.live.delete(session);
    this.decrement(role);
  }

  private decrement(role: string): void {
    const n = (this.count.get(role) ?? 1) - 1;
    if (n <= 0) this.count.delete(role);
    else this.count.set(role, n);
    this.room(role);
  }

  private sweep(): void {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const [key, list] of this.idle) {
      const role = key.slice(0, key.indexOf('\0'));
      const keep = list.filter((i) => {
        if (i.since >= cutoff && !i.session.socket.destroyed) return true;
        this.destroy(role, i.session);
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
    this.silence?.close();
    clearInterval(this.sweeper);
    for (const [key, list] of this.idle) {
      const role = key.slice(0, key.indexOf('\0'));
      for (const i of list) this.destroy(role, i.session);
    }
    this.idle.clear();
  }
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
