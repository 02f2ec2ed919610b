/** What a session pool is made with (session-pool.ts). */
import type { Logger } from '../shared/logger.js';
import type { Admission } from './admission.js';
import type { BackendBudget } from './budget.js';
import type { UpstreamSession, UpstreamTarget } from './session.js';

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
  /** How long `acquire` waits for room before 53300 (for its turn, then for a session). */
  waitMs: number;
  /** The process's backends, shared with the other pools; unset: this pool's own, unbounded. */
  budget?: BackendBudget;
  /** The process's fair queue of transactions, shared with the other pools; unset: none. */
  admission?: Admission | undefined;
  /** The user a role acts for, whose turn and limits are its sessions' (a scoped key's role: its user's); default: the role itself. */
  userOf?(role: string): string;
  /** Told of each session just logged in (the embedded cluster lowers its backend's CPU weight: cpu-weight.ts). */
  onOpened?(session: UpstreamSession): void;
  /** The pool's name in the metrics (`wire`, `rest`); unset: not in the metrics. */
  metricsName?: string;
  /**
   * Set for a pool whose every handed-out session runs one statement (the REST API's): a session
   * handed out that passes no byte either way for this long (for its own user: `0` never), unless
   * its reader paused it, is closed (see `SilenceWatch`), so its statement fails with 08006 instead
   * of waiting for ever on a network that stopped answering. Unset: the user watches (the wire
   * relay knows when an answer is owed).
   */
  silenceMs?: number | ((session: UpstreamSession) => number);
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
