/**
 * One budget of upstream backends for the whole process (`upstreamMaxSessions`, this process's
 * share of it): the wire front end's pool and the REST API's draw from it alike. Postgres'
 * `max_connections` is the hard wall; the budget keeps the service under it with room for the
 * control plane and an admin, whatever mix of users and front ends asks.
 *
 * A pool takes a slot before it opens a backend and gives it back when the backend closes. When
 * none is free, the request waits in order (`wait`): idle backends of any pool — another role's,
 * since the role asking has none idle — are closed first to make room, and a backend returned to
 * a pool while someone waits for a slot is closed instead of kept idle (see `pressed`).
 *
 * Reserved share: the last tenth of the slots goes only to users who hold fewer backends than
 * their fair share (the budget divided among the users holding any), so that a user who holds
 * nothing always finds one at once, however many another keeps (idle in open transactions: they
 * cannot be closed for anyone). Slots given back go to such a user first.
 */
export interface IdleCloser {
  /** When its longest-idle backend (of the users `of` accepts) went idle, or undefined if it has none. */
  oldestIdle(of?: (user: string) => boolean): number | undefined;
  /** Closes its longest-idle backend (of the users `of` accepts; its slot comes back through `give`). */
  closeOldestIdle(of?: (user: string) => boolean): void;
}

interface Waiter {
  grant(): void;
  user: string | undefined;
}

export class BackendBudget {
  private used = 0;
  private readonly waiters: Waiter[] = [];
  private readonly pools = new Set<IdleCloser>();
  /** Slots held per user (those taken with one named). */
  private readonly byUser = new Map<string, number>();
  /** The slots only users below their fair share may take. */
  readonly reserve: number;

  constructor(readonly max: number) {
    this.reserve = max >= 10 ? Math.ceil(max / 10) : 0;
  }

  /** Backends `user` holds. */
  heldBy(user: string): number {
    return this.byUser.get(user) ?? 0;
  }

  /**
   * Whether `user` may take one of the reserved slots: fewer than their share of the budget, as
   * if one more user came (so that one user alone keeps the reserve free for the next).
   */
  private belowShare(user: string | undefined): boolean {
    if (user === undefined) return false;
    return this.heldBy(user) < Math.max(1, Math.floor(this.max / (this.byUser.size + 1)));
  }

  private count(user: string | undefined, delta: number): void {
    if (user === undefined) return;
    const n = this.heldBy(user) + delta;
    if (n <= 0) this.byUser.delete(user);
    else this.byUser.set(user, n);
  }

  /** Backends open (or opening) in all pools. */
  get inUse(): number {
    return this.used;
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Whether someone waits for a slot: an idle backend is then worth more closed. */
  get pressed(): boolean {
    return this.waiters.length > 0;
  }

  /** Lets `wait` close the pool's idle backends for others; returns the unregistration. */
  register(pool: IdleCloser): () => void {
    this.pools.add(pool);
    return () => void this.pools.delete(pool);
  }

  /** Takes a slot for `user` if one is free (a reserved one only when the user is below their share). */
  take(user?: string): boolean {
    if (this.used >= this.max) return false;
    if (this.used >= this.max - this.reserve && !this.belowShare(user)) return false;
    this.used++;
    this.count(user, 1);
    return true;
  }

  /** Gives `user`'s slot back (a backend closed, or an open failed); a waiter below their share gets it, else the longest waiter. */
  give(user?: string): void {
    this.used--;
    this.count(user, -1);
    if (this.waiters.length === 0) return;
    let i = this.waiters.findIndex((w) => this.belowShare(w.user));
    if (i < 0) {
      if (this.used >= this.max - this.reserve) return; // only the reserve is free: it waits for a user below their share
      i = 0;
    }
    const next = this.waiters.splice(i, 1)[0]!;
    this.used++;
    this.count(next.user, 1);
    next.grant();
  }

  /**
   * Waits in line for a slot; `grant` runs once one is taken for the caller. Closes the
   * longest-idle backend of any pool to make room. Returns the function that leaves the line.
   */
  wait(grant: () => void, user?: string): () => void {
    const waiter: Waiter = { grant, user };
    this.waiters.push(waiter);
    this.reclaim();
    return () => {
      const i = this.waiters.indexOf(waiter);
      if (i >= 0) this.waiters.splice(i, 1);
    };
  }

  /**
   * Closes an idle backend among the pools for a waiter: the longest-idle one of a user holding
   * more than their share of the budget, however briefly idle; else the longest-idle one of
   * anybody, if it is idle since before `idleBefore` (a Date.now() value, when given: one idle only
   * between two transactions is not worth closing).
   */
  reclaim(idleBefore = Infinity): void {
    const share = Math.max(1, Math.floor(this.max / Math.max(1, this.byUser.size)));
    const aboveShare = (user: string) => this.heldBy(user) > share;
    if (this.closeOldest(aboveShare, Infinity)) return;
    this.closeOldest(undefined, idleBefore);
  }

  private closeOldest(of: ((user: string) => boolean) | undefined, idleBefore: number): boolean {
    let oldest: { pool: IdleCloser; since: number } | undefined;
    for (const pool of this.pools) {
      const since = pool.oldestIdle(of);
      if (since !== undefined && (oldest === undefined || since < oldest.since)) oldest = { pool, since };
    }
    if (oldest === undefined || oldest.since >= idleBefore) return false;
    oldest.pool.closeOldestIdle(of);
    return true;
  }
}
