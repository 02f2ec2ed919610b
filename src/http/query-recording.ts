/**
 * The history entry of one `POST /query/`: made when the request comes, recorded once when its
 * answer ends — succeeded, failed, or cancelled (a cancel, or its client gone). It is itself the
 * entry the history buffers (one object per request, nothing awaited: see control/query-history.ts).
 */
import type { HistoryEntry } from '../control/history-pages.js';
import type { QueryHistory } from '../control/query-history.js';
import type { ErrorJson } from '../control/query-records.js';
import type { Principal } from '../control/control-plane.js';
import { PgError, SqlState } from '../shared/errors.js';
import { errorObject, shownError } from './errors.js';

export class Recording implements HistoryEntry {
  readonly user: string;
  readonly keyId: string;
  finishedAt = 0;
  status: HistoryEntry['status'] = 'succeeded';
  command: string | null = null;
  rowCount: number | null = null;
  error: ErrorJson | null = null;
  private recorded = false;

  constructor(
    private readonly history: QueryHistory,
    principal: Principal,
    readonly queryString: string,
    readonly submittedAt: number,
  ) {
    this.user = principal.user;
    this.keyId = principal.keyId;
  }

  /** The statement ran to its end (or to the row cap). */
  succeeded(command: string | null, rowCount: number | null): void {
    if (this.recorded) return;
    this.command = command;
    this.rowCount = rowCount;
    this.record('succeeded');
  }

  /** It failed with `err` (as the client was shown it); `cancelled` when a cancel or the client's leaving ended it. */
  failed(err: unknown, cancelled: boolean, requestId: string): void {
    if (this.recorded) return;
    const shown = shownError(err, `request id ${requestId}`);
    this.error = errorObject(shown);
    this.record(cancelled && shown.code === SqlState.QueryCanceled ? 'cancelled' : 'failed');
  }

  /** Its client went away before the answer ended (a no-op when it was recorded already). */
  abandoned(): void {
    if (this.recorded) return;
    this.error = errorObject(new PgError(SqlState.QueryCanceled, 'canceling statement due to user request'));
    this.record('cancelled');
  }

  /** Recorded elsewhere (an async query is its own row): nothing is recorded here. */
  dismiss(): void {
    this.recorded = true;
  }

  private record(status: HistoryEntry['status']): void {
    this.recorded = true;
    this.status = status;
    this.finishedAt = Date.now();
    this.history.record(this);
  }
}
