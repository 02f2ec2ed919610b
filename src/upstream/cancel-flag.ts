/**
 * Asking a running REST statement to end early (its client went away, a cancel named it), and
 * Postgres' own words for a cancelled statement.
 */
import { PgError, SqlState } from '../shared/errors.js';

/** Postgres' own words for a cancelled statement, for the cases where Postgres did not get to say them. */
export function canceled(): PgError {
  return new PgError(SqlState.QueryCanceled, 'canceling statement due to user request');
}

/**
 * Asks a statement to end early (its client went away, a cancel named it): a one-shot flag with
 * one listener. Every REST request makes one, so it is a plain object rather than an
 * AbortController, whose EventTarget and signal cost the route ≈ 2 % of its CPU.
 */
export class CancelFlag {
  private listener: (() => void) | undefined;
  private raised = false;
  /** Why it was raised, when the raiser said (its API key was revoked or expired). */
  reason: string | undefined;

  /** Whether `cancel` was called. */
  get cancelled(): boolean {
    return this.raised;
  }

  /** Raises the flag and calls the listener, once. */
  cancel(reason?: string): void {
    if (this.raised) return;
    this.raised = true;
    this.reason = reason;
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  /** Calls `listener` when the flag is raised (at once if it is already); replaces the listener before. */
  onCancel(listener: () => void): void {
    if (this.raised) listener();
    else this.listener = listener;
  }
}
