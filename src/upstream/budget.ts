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
 */
export interface IdleCloser {
  /** When its longest-idle backend went idle, or undefined if it has none. */
  oldestIdle(): number | undefined;
  /** Closes its longest-idle backend (its slot comes back through `give`). */
  closeOldestIdle(): void;
}

interface Waiter {
  grant(): void;
}

export class BackendBudget {
  private used = 0;
  private readonly waiters: Waiter[] = [];
  private readonly pools = new Set<IdleCloser>();

  constructor(readonly max: number) {}

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

  /** Takes a slot if one is free. */
  take(): boolean {
    if (this.used >= this.max) return false;
    this.used++;
    return true;
  }

  /** Gives a slot back (a backend closed, or an open failed); the longest waiter gets it. */
  give(): void {
    this.used--;
    const next = this.waiters.shift();
    if (next === undefined) return;
    this.used++;
    next.grant();
  }

  /**
   * Waits in line for a slot; `grant` runs once one is taken for the caller. Closes the
   * longest-idle backend of any pool to make room. Returns the function that leaves the line.
   */
  wait(grant: () => void): () => void {
    const waiter: Waiter = { grant };
    this.waiters.push(waiter);
    this.reclaim();
    return () => {
      const i = this.waiters.indexOf(waiter);
      if (i >= 0) this.waiters.splice(i, 1);
    };
  }

  /**
   * Closes the longest-idle backend among the pools, if any is idle (since before `idleBefore`,
   * a Date.now() value, when given: one idle only between two transactions is not worth closing).
   */
  reclaim(idleBefore = Infinity): void {
    let oldest: { pool: IdleCloser; since: number } | undefined;
    for (const pool of this.pools) {
      const since = pool.oldestIdle();
      if (since !== undefined && (oldest === undefined || since < oldest.since)) oldest = { pool, since };
    }
    if (oldest !== undefined && oldest.since < idleBefore) oldest.pool.closeOldestIdle();
  }
}
