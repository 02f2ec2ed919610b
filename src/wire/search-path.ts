/**
 * The search_path a client's next statement is judged with, followed through its session as
 * Postgres keeps it: SET changes it for the session, SET LOCAL until the transaction ends, and a
 * transaction that rolls back undoes what SET did in it. The policy reads it to say where each
 * unqualified name lands.
 */
import type { Session, SessionChange } from '../policy/index.js';
import type { TransactionStatus } from '../protocol/index.js';

const POSTGRES_DEFAULT: readonly string[] = ['$user', 'public'];

export class SearchPath {
  /** What the policy reads: the path in force now. */
  session: Session;
  /** The path without SET LOCAL (what the transaction's end returns to, if it commits). */
  private sessionPath: readonly string[];
  /** The session path when the open transaction block began (what a rollback returns to). */
  private atBegin: readonly string[] | undefined;

  constructor(session: Session) {
    this.session = session;
    this.sessionPath = session.searchPath;
  }

  /**
   * A request got its ReadyForQuery: its changes apply if it succeeded; `before` and `after` are
   * the transaction status around it (a block that ends failed, or by ROLLBACK, undoes its SETs).
   */
  requestDone(changes: readonly SessionChange[], failed: boolean, before: TransactionStatus, after: TransactionStatus): void {
    if (changes.length === 0 && after !== 'I' && before !== 'I') return; // inside a block, nothing changed: the hot path
    const start = this.sessionPath;
    let path = this.session.searchPath;
    if (before === 'I' && after !== 'I') this.atBegin = start;
    if (!failed) {
      for (const c of changes) {
        switch (c.kind) {
          case 'search_path':
            path = c.value;
            if (c.local === undefined) this.sessionPath = path;
            break;
          case 'reset_search_path':
            path = this.session.defaultSearchPath ?? POSTGRES_DEFAULT;
            if (c.local === undefined) this.sessionPath = path;
            break;
          case 'transaction_end':
            // COMMIT of a failed block rolls it back.
            if (!c.commit || before === 'E') this.sessionPath = this.atBegin ?? this.sessionPath;
            path = this.sessionPath;
            this.atBegin = undefined;
            break;
        }
      }
    }
    if (after === 'I') {
      // The transaction is over: a failed block that ended (a COMMIT that failed) is rolled back,
      // and SET LOCAL ends with it.
      if (failed && before !== 'I' && this.atBegin !== undefined) this.sessionPath = this.atBegin;
      this.atBegin = undefined;
      path = this.sessionPath;
    }
    if (path !== this.session.searchPath) this.session = { ...this.session, searchPath: path };
  }
}
