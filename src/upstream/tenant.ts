/**
 * One user's part in the fair queue (admission.ts): their slots, their line, their weight; and a
 * backend's hold of a slot.
 */
import { PgError, SqlState } from '../shared/errors.js';

export interface TenantLimits {
  /** Transactions running at once (this process's share); 0 = no limit of the user's own. */
  active: number;
  /** Upstream milliseconds per minute before the user is slowed (this process's share); 0 = off. */
  timeBudgetMs: number;
}

/** One user's share of the slots. */
export class Tenant {
  /** Slots held whose backend counts as running. */
  running = 0;
  /** Slots held whose backend was last seen using no CPU. */
  parked = 0;
  /** Transactions waiting for a slot, first in line first. */
  readonly queue: Waiter[] = [];
  /** 1, or `SLOWED_WEIGHT` past the time budget. */
  weight = 1;
  limit: number;
  budgetMs: number;
  /** Upstream time used in the current minute, and when that minute began (performance.now()). */
  usedMs = 0;
  windowStart = 0;
  /** When it was last let in (`Admission`'s count of admissions): among equals, the one served longest ago goes first. */
  turn = 0;

  constructor(
    readonly user: string,
    limits: TenantLimits,
  ) {
    this.limit = limits.active;
    this.budgetMs = limits.timeBudgetMs;
  }

  /** Whether it takes part in the division of the slots: something running or waiting. */
  get competing(): boolean {
    return this.running > 0 || this.queue.length > 0;
  }
}

export interface Waiter {
  started: number;
  /** performance.now() past which it fails with 53300. */
  deadline: number;
  ms: number;
  /** Called, never at once, with the slot (`tenant`) or the error that ends the wait. */
  done: TurnDone;
}

/** How a wait for a turn ends: with `tenant` (the slot taken), or with `err` and no tenant. */
export type TurnDone = (err: unknown, tenant?: Tenant) => void;

/** Ends a wait in a microtask of its own (see `Admission.waitFor`). */
export function settleLater(w: Waiter, err: unknown, tenant?: Tenant): void {
  queueMicrotask(() => w.done(err, tenant));
}

/**
 * A backend's hold of a slot: one object per upstream session, reused for each of its holders
 * (set up with `newHold`, kept on the session).
 */
export interface Hold {
  tenant: Tenant | undefined;
  /** The backend's process id, as pg_stat_activity names it. */
  readonly pid: number;
  /** Order of the holds (`Admission.seq` when taken): a sample applies only to holds older than it. */
  seq: number;
  parked: boolean;
  /** When it was taken (performance.now()), for the time budget; 0 when nobody's budget is on. */
  since: number;
  /** Its place in the admission's list of holds while it holds a slot; -1 otherwise. */
  at: number;
  /** Whether its backend's CPU weight is lowered, its user heavy (heavy-users.ts). */
  lowered: boolean;
}

export function newHold(pid: number): Hold {
  return { tenant: undefined, pid, seq: 0, parked: false, since: 0, at: -1, lowered: false };
}

/**
 * Puts `w` in its user's line: the one whose wait ends first goes first (a REST statement, which
 * waits less, before wire transactions that came a little earlier); first come, first served
 * among equal waits — the common case, a push.
 */
export function enqueue(queue: Waiter[], w: Waiter): void {
  if (queue.length === 0 || queue[queue.length - 1]!.deadline <= w.deadline) {
    queue.push(w);
    return;
  }
  let lo = 0;
  let hi = queue.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (queue[mid]!.deadline <= w.deadline) lo = mid + 1;
    else hi = mid;
  }
  queue.splice(lo, 0, w);
}

/** The error of a wait for a turn that lasted `ms` (53300), saying whether the user's own limit or the service's `max` was full. */
export function waitedTooLong(t: Tenant, ms: number, max: number): PgError {
  const own = t.limit > 0 && t.running >= t.limit;
  return new PgError(SqlState.TooManyConnections, `too many transactions at once: one of user "${t.user}" waited ${ms} ms for its turn upstream`, {
    hint: own
      ? `user "${t.user}" may run at most ${t.limit} transactions at once here; retry, keep transactions short, or ask the service's admin for a higher limit`
      : `the service runs at most ${max} transactions at once and shares them fairly among users; retry, or keep transactions short`,
  });
}
