/**
 * Admission control with fair queuing: one per process, in front of both session pools (the wire
 * front end's and the REST API's), so that the transactions running upstream at once stay near
 * what the cluster's cores can run (`max`, this process's share of `upstreamActiveMax`) and,
 * past it, users take turns instead of the one with the most clients taking every backend.
 *
 * A transaction takes a slot when it gets a backend (a wire client for its transaction, or for its
 * session in session mode; a REST statement) and gives it back with the backend: one running is
 * never interrupted, and an open `BEGIN` keeps its slot. Past `max`, transactions wait in a queue
 * per user, in the order their waits end within a user (first come first served among equal
 * waits); a slot that comes back goes to the waiting user who runs the fewest for their weight
 * (round robin over users: 300 busy clients and one get the same share). Two things come before
 * the queue, and one after it:
 *
 * - **Reserved share.** A user below their fair share (`max` divided among the users running or
 *   waiting, at least one) is let in at once even past `max`, up to `max + reserve`: a user with
 *   nothing running never waits behind another's flood. Others' transactions beyond their share
 *   end as they do, and their next ones wait.
 * - **Only what runs counts.** A slot whose backend uses no CPU — idle between transactions of a
 *   pinned client, idle inside a transaction, waiting on a lock, a sleep or its client — is
 *   parked: it counts for its user but not against `max`. Which backends those are is asked of
 *   Postgres (`sampleParked`, pg_stat_activity) every `SAMPLE_MS` while anyone waits and some
 *   slot has been held that long, never otherwise.
 * - **Cores, not only slots.** Where the service may set its backends' CPU weights (`heavy`), a
 *   user running more than a quarter of `max` while another user is active has theirs lowered
 *   (heavy-users.ts), looked at on the same ticker.
 *
 * While nobody waits a transaction costs two counter updates, a map look-up and a comparison:
 * nothing is timed, sampled or queued. Limits per user (`active`: at most that many running; a
 * time budget per minute past which the user's weight drops to `SLOWED_WEIGHT`, slowed, never
 * refused) come from `limitsOf` and are read again by `refresh`.
 */
import { PgError, SqlState } from '../shared/errors.js';
import { enqueue, settleLater, Tenant, waitedTooLong, type Hold, type TenantLimits, type TurnDone } from './tenant.js';
import { heavyAbove, type HeavyUsers } from './heavy-users.js';
import type { SessionDone } from './session.js';

export { newHold, Tenant, type Hold, type TenantLimits, type TurnDone } from './tenant.js';

/** How often Postgres is asked which held backends use no CPU, while anyone waits. */
const SAMPLE_MS = 100;
/** A user past their time budget: a quarter of the weight of the others. */
export const SLOWED_WEIGHT = 0.25;
const MINUTE_MS = 60_000;

export interface AdmissionOptions {
  /** Transactions running upstream at once in this process. */
  max: number;
  /** How many past `max` users below their fair share may still take. */
  reserve: number;
  limitsOf(user: string): TenantLimits;
  /** Told how long each transaction that waited did (the user's usage). */
  onWaited?(user: string, ms: number): void;
  /** The process ids of the backends that use no CPU now; asked only while someone waits. */
  sampleParked?(): Promise<ReadonlySet<number>>;
  /** Lowers the CPU weight of heavy users' backends, where the service may. */
  heavy?: HeavyUsers;
}

export interface AdmissionStates {
  running: number;
  parked: number;
  waiting: number;
  usersWaiting: number;
}

export class Admission {
  private running = 0;
  private parked = 0;
  private waiting = 0;
  /** Sum of the weights of the competing tenants. */
  private weights = 0;
  private readonly tenants = new Map<string, Tenant>();
  private readonly queued = new Set<Tenant>();
  /** The holds of slots, each at its `at` (an array: a Set's add and delete cost every transaction a hash look-up each). */
  private readonly holds: Hold[] = [];
  private seq = 0;
  private turns = 0;
  /** `turns` at the last look for heavy users: a user let in since took part. */
  private lookedTurns = 0;
  private readonly heavyAbove: number;
  /** Whether some user's time budget is on: only then are holds timed. */
  private budgets = 0;
  private ticker: NodeJS.Timeout | undefined;
  private sampling = false;
  /** The longest wait seen since `takeLongestWait` was last called (ms). */
  private longestWait = 0;
  /** Told of each transaction's wait in seconds (the metrics' histogram). */
  waited: ((seconds: number) => void) | undefined;

  constructor(private readonly opts: AdmissionOptions) {
    this.heavyAbove = opts.heavy === undefined ? Infinity : heavyAbove(opts.max);
  }

  get max(): number {
    return this.opts.max;
  }

  private tenant(user: string): Tenant {
    let t = this.tenants.get(user);
    if (t === undefined) {
      if (this.tenants.size >= 100_000) this.forgetIdle();
      t = new Tenant(user, this.opts.limitsOf(user));
      if (t.budgetMs > 0) this.budgets++;
      this.tenants.set(user, t);
    }
    return t;
  }

  /** A slot for `user` now, if they may run another transaction without waiting; undefined otherwise. */
  enter(user: string): Tenant | undefined {
    const t = this.tenant(user);
    if (t.queue.length > 0 || !this.admits(t)) return undefined;
    this.admit(t);
    return t;
  }

  /** A slot for `user` once it is their turn; 53300 after `ms`. */
  wait(user: string, ms: number): Promise<Tenant> {
    return new Promise((resolve, reject) => this.waitFor(user, ms, (err, t) => (t === undefined ? reject(err) : resolve(t))));
  }

  /**
   * `wait` with a callback (no promise: many clients on few backends wait for every transaction).
   * `done` is called in a microtask of its own, never inside the `leave` that let it in: whoever
   * gave the slot back finishes first (a lent backend is pooled before the next one looks).
   */
  waitFor(user: string, ms: number, done: TurnDone): void {
    const t = this.tenant(user);
    const now = performance.now();
    const was = t.competing;
    enqueue(t.queue, { started: now, deadline: now + ms, ms, done });
    this.compete(t, was);
    this.queued.add(t);
    this.waiting++;
    this.tick();
    this.dispatch();
  }

  /** The slot taken by `enter` or `wait` is now held by the backend of `hold`. */
  hold(t: Tenant, hold: Hold): void {
    hold.tenant = t;
    hold.seq = ++this.seq;
    hold.parked = false;
    if (this.budgets > 0) hold.since = performance.now();
    if (hold.at < 0) hold.at = this.holds.push(hold) - 1;
  }

  /** Gives back the slot `hold` holds, if any. */
  leave(hold: Hold): void {
    const t = hold.tenant;
    if (t === undefined) return;
    hold.tenant = undefined;
    this.unlist(hold);
    if (hold.since > 0) {
      this.spent(t, performance.now() - hold.since);
      hold.since = 0;
    }
    if (hold.parked) {
      t.parked--;
      this.parked--;
    } else {
      this.release(t);
    }
    if (this.waiting > 0) this.dispatch();
  }

  /** Takes `hold` out of the list of holds: the last one takes its place. */
  private unlist(hold: Hold): void {
    const last = this.holds.pop()!;
    if (last !== hold) {
      this.holds[hold.at] = last;
      last.at = hold.at;
    }
    hold.at = -1;
  }

  /** Gives back a slot no backend came to hold (opening one failed). */
  cancel(t: Tenant): void {
    this.release(t);
    if (this.waiting > 0) this.dispatch();
  }

  /** The callback of a wait for a session taken with `turn`: the session holds it, or the turn goes back when none comes. */
  holding(turn: Tenant, done: SessionDone): SessionDone {
    return (err, session) => {
      if (session === undefined) this.cancel(turn);
      else this.hold(turn, session.hold);
      done(err, session);
    };
  }

  /** Reads the limits of `users` again (an admin changed them). */
  refresh(users: readonly string[]): void {
    for (const user of users) {
      const t = this.tenants.get(user);
      if (t === undefined) continue;
      const limits = this.opts.limitsOf(user);
      if ((t.budgetMs > 0) !== (limits.timeBudgetMs > 0)) this.budgets += limits.timeBudgetMs > 0 ? 1 : -1;
      t.limit = limits.active;
      t.budgetMs = limits.timeBudgetMs;
      if (t.budgetMs === 0) this.reweigh(t, 1);
    }
    if (this.waiting > 0) this.dispatch();
  }

  states(): AdmissionStates {
    return { running: this.running, parked: this.parked, waiting: this.waiting, usersWaiting: this.queued.size };
  }

  /** The longest any transaction waited since the last call, in ms. */
  takeLongestWait(): number {
    const ms = this.longestWait;
    this.longestWait = 0;
    return ms;
  }

  close(): void {
    clearTimeout(this.ticker);
    this.ticker = undefined;
    for (const t of this.queued) for (const w of t.queue.splice(0)) settleLater(w, new PgError(SqlState.AdminShutdown, 'the service is shutting down'));
    this.queued.clear();
    this.waiting = 0;
  }

  // ── the rules ──────────────────────────────────────────────────────────────────────────

  /** Whether `t` may start another transaction now (its own line aside). */
  private admits(t: Tenant): boolean {
    if (t.limit > 0 && t.running >= t.limit) return false;
    if (this.running < this.opts.max) return true;
    return this.running < this.opts.max + this.opts.reserve && t.running < this.share(t);
  }

  /** `t`'s fair share of `max`: divided among the competing users by weight, at least one. */
  private share(t: Tenant): number {
    const weights = this.weights + (t.competing ? 0 : t.weight);
    return Math.max(1, (this.opts.max * t.weight) / weights);
  }

  private admit(t: Tenant, was = t.competing): void {
    t.running++;
    this.running++;
    t.turn = ++this.turns;
    this.compete(t, was);
    if (t.running > this.heavyAbove) this.tick();
  }

  private release(t: Tenant): void {
    const was = t.competing;
    t.running--;
    this.running--;
    this.compete(t, was);
  }

  /** Keeps the sum of the competing weights as `t` starts or stops competing (`was`: before the change). */
  private compete(t: Tenant, was: boolean): void {
    const now = t.competing;
    if (was !== now) this.weights += now ? t.weight : -t.weight;
  }

  private reweigh(t: Tenant, weight: number): void {
    if (t.weight === weight) return;
    if (t.competing) this.weights += weight - t.weight;
    t.weight = weight;
  }

  /** Upstream time `t` used: past its budget in the current minute it is slowed, until the next. */
  private spent(t: Tenant, ms: number): void {
    if (t.budgetMs === 0) return;
    const now = performance.now();
    if (now - t.windowStart >= MINUTE_MS) {
      t.windowStart = now;
      t.usedMs = 0;
    }
    t.usedMs += ms;
    this.reweigh(t, t.usedMs > t.budgetMs ? SLOWED_WEIGHT : 1);
  }

  /**
   * Lets in waiting transactions while slots allow: the user running the fewest for their weight
   * first, and among those the one let in longest ago (round robin).
   */
  private dispatch(): void {
    while (this.waiting > 0) {
      let best: Tenant | undefined;
      let bestLoad = 0;
      for (const t of this.queued) {
        if (t.limit > 0 && t.running >= t.limit) continue;
        const load = t.running / t.weight;
        if (best === undefined || load < bestLoad || (load === bestLoad && t.turn < best.turn)) {
          best = t;
          bestLoad = load;
        }
      }
      if (best === undefined || !this.admits(best)) return;
      const w = best.queue.shift()!;
      this.waiting--;
      if (best.queue.length === 0) this.queued.delete(best);
      this.admit(best, true); // it was competing, with its place in line
      this.waitedFor(best.user, performance.now() - w.started);
      settleLater(w, undefined, best);
    }
  }

  private waitedFor(user: string, ms: number): void {
    if (ms > this.longestWait) this.longestWait = ms;
    this.waited?.(ms / 1000);
    this.opts.onWaited?.(user, ms);
  }

  /**
   * While anyone waits: fails those past their deadline, and asks Postgres what runs — when some
   * slot has been held since the ticker was set. Slots all taken since have been held less than
   * a tick (short REST statements and wire transactions queueing behind each other take turns
   * this fast): asking about them would cost Postgres a scan of pg_stat_activity ten times a
   * second, and one that parks at once is seen a tick later.
   */
  private tick(): void {
    if (this.ticker !== undefined) return;
    const armed = this.seq;
    this.ticker = setTimeout(() => {
      this.ticker = undefined;
      this.expire();
      if (this.opts.sampleParked !== undefined && this.waiting > 0 && !this.sampling && this.heldSince(armed)) void this.sample(this.opts.sampleParked);
      if (this.opts.heavy !== undefined) this.lookForHeavy(this.opts.heavy);
      if (this.waiting > 0 || this.opts.heavy?.any === true) this.tick();
    }, SAMPLE_MS);
    this.ticker.unref();
  }

  /** Tells `heavy` what runs, and whether more than one user took part since the last look. */
  private lookForHeavy(heavy: HeavyUsers): void {
    let active = 0;
    for (const t of this.tenants.values()) if ((t.competing || t.turn > this.lookedTurns) && ++active === 2) break;
    this.lookedTurns = this.turns;
    heavy.look(this.holds, active, this.heavyAbove);
  }

  /** Whether a slot taken at or before `seq` is still held. */
  private heldSince(seq: number): boolean {
    for (const hold of this.holds) if (hold.seq <= seq) return true;
    return false;
  }

  private expire(): void {
    const now = performance.now();
    for (const t of this.queued) {
      while (t.queue.length > 0 && t.queue[0]!.deadline <= now) {
        const w = t.queue.shift()!;
        this.waiting--;
        this.compete(t, true);
        this.waitedFor(t.user, now - w.started);
        settleLater(w, waitedTooLong(t, w.ms, this.opts.max));
      }
      if (t.queue.length === 0) this.queued.delete(t);
    }
  }

  /** Marks the holds whose backends use no CPU as parked (and those that run again as running), then lets waiters in. */
  private async sample(ask: () => Promise<ReadonlySet<number>>): Promise<void> {
    this.sampling = true;
    const before = this.seq;
    try {
      const idle = await ask();
      for (const hold of this.holds) {
        const t = hold.tenant;
        if (t === undefined || hold.seq > before) continue; // taken since the question: not what was seen
        const parked = idle.has(hold.pid);
        if (parked === hold.parked) continue;
        hold.parked = parked;
        const was = t.competing;
        t.running += parked ? -1 : 1;
        t.parked += parked ? 1 : -1;
        this.running += parked ? -1 : 1;
        this.parked += parked ? 1 : -1;
        this.compete(t, was);
      }
    } catch {
      // Postgres did not answer: the counts stay as they were; the next look asks again.
    } finally {
      this.sampling = false;
    }
    if (this.waiting > 0) this.dispatch();
  }

  private forgetIdle(): void {
    for (const [user, t] of this.tenants) {
      if (t.running === 0 && t.parked === 0 && t.queue.length === 0) {
        if (t.budgetMs > 0) this.budgets--;
        this.tenants.delete(user);
      }
    }
  }
}
