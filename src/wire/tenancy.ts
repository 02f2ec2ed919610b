/**
 * The wire front end's share of the per-user limits (shared/limits.ts), kept at the seams of the
 * relay rather than inside it: how many connections each user has open (a connection past the
 * user's limit is refused with 53300 after authentication), and one sweep a second over the
 * clients for the two timeouts Postgres enforces on its own but a client could SET away:
 *
 * - **Idle in transaction.** A client inside a transaction, with nothing in flight and no byte
 *   either way for `idleInTransactionTimeoutMs`, is ended with Postgres' own FATAL 25P03; its
 *   transaction is rolled back and its backend freed. (Its backend logged in with
 *   `idle_in_transaction_session_timeout`, so Postgres usually says it first.)
 * - **Statement timeout.** A request in flight with no byte either way for a second past
 *   `statementTimeoutMs` is cancelled, as if Postgres' own `statement_timeout` (which its backend
 *   logged in with, and which says it first unless the client SET it higher) had ended it.
 *
 * The sweep reads each client's state and byte counts: nothing is timed per statement.
 */
import type { Socket } from 'node:net';
import { PgError, SqlState } from '../shared/errors.js';
import type { UserLimits } from '../shared/limits.js';
import type { Relay } from './relay.js';

/** How often the clients are looked at. */
const SWEEP_MS = 1_000;
/** Past the statement timeout, how long before the front end cancels what Postgres did not. */
const STATEMENT_GRACE_MS = 1_000;

interface Watched {
  relay: Relay;
  user: string;
  /** Bytes both ways, the state, and since when they have been so (Date.now()). */
  bytes: number;
  inTransaction: boolean;
  busy: boolean;
  since: number;
  cancelled: boolean;
}

export class WireTenancy {
  private readonly connections = new Map<string, number>();
  private readonly watched = new Map<Socket, Watched>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly limitsOf: (user: string) => UserLimits) {
    this.timer = setInterval(() => this.sweep(), SWEEP_MS);
    this.timer.unref();
  }

  /**
   * Counts a connection of `user` on `socket` until it closes; throws the FATAL 53300 when the
   * user has as many open as their limit (this process's share of it).
   */
  connect(user: string, socket: Socket): void {
    const limit = this.limitsOf(user).connections;
    const open = this.connections.get(user) ?? 0;
    if (limit > 0 && open >= limit) {
      throw new PgError(SqlState.TooManyConnections, `too many connections for user "${user}"`, {
        severity: 'FATAL',
        detail: `user "${user}" may have ${limit} connections open at once here`,
        hint: 'close connections you do not use, pool them in your application, or ask the service\'s admin for a higher limit',
      });
    }
    this.connections.set(user, open + 1);
    socket.once('close', () => {
      const n = (this.connections.get(user) ?? 1) - 1;
      if (n <= 0) this.connections.delete(user);
      else this.connections.set(user, n);
    });
  }

  /** Connections `user` has open in this process. */
  connectionsOf(user: string): number {
    return this.connections.get(user) ?? 0;
  }

  /** Watches a client's timeouts from the start of its session until its socket closes. */
  watch(socket: Socket, relay: Relay, user: string): void {
    this.watched.set(socket, { relay, user, bytes: -1, inTransaction: false, busy: false, since: 0, cancelled: false });
    socket.once('close', () => this.watched.delete(socket));
  }

  close(): void {
    clearInterval(this.timer);
    this.watched.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [socket, w] of this.watched) {
      const relay = w.relay;
      const bytes = socket.bytesRead + socket.bytesWritten;
      const inTransaction = relay.transactionStatus !== 'I';
      const busy = relay.busy;
      if (bytes !== w.bytes || inTransaction !== w.inTransaction || busy !== w.busy) {
        w.bytes = bytes;
        w.inTransaction = inTransaction;
        w.busy = busy;
        w.since = now;
        w.cancelled = false;
        continue;
      }
      const still = now - w.since;
      const limits = this.limitsOf(w.user);
      if (inTransaction && !busy && limits.idleInTransactionTimeoutMs > 0 && still >= limits.idleInTransactionTimeoutMs) {
        relay.terminate(new PgError(SqlState.IdleInTransactionSessionTimeout, 'terminating connection due to idle-in-transaction timeout'));
      } else if (busy && !w.cancelled && limits.statementTimeoutMs > 0 && still >= limits.statementTimeoutMs + STATEMENT_GRACE_MS) {
        w.cancelled = true;
        void relay.cancel();
      }
    }
  }
}
