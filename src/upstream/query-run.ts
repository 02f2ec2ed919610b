/**
 * Runs one REST statement on a raw upstream session of the user's own role, in ONE round trip:
 * a single simple-protocol `Query` goes out in one write. Rows are decoded as they arrive and
 * handed out in batches; when the reader falls behind, the socket is paused, so Postgres blocks
 * on its send and a result of any size passes through in constant memory (TCP is the cursor).
 * Values stay the text Postgres printed.
 *
 * Why not pg + pg-cursor: a cursor needs a second round trip to close its portal and the reset
 * of session settings a third, before the connection can serve again; measured, that held the
 * REST API to 0.17–0.4× of a bare fastify + pg route.
 *
 * The reset of the previous request's settings rides in the same Query (`RESET ALL; <statement>`),
 * or goes ahead of it as a Query of its own, or is skipped after a statement that cannot have
 * changed a setting (query-reset.ts).
 *
 * A statement ended early (its client gone, a cancel asked for, the row cap reached) is cancelled
 * in Postgres — a CancelRequest to its backend, as libpq sends it — and the rest of its answer is
 * read and dropped, so the session is idle, and reusable, once Postgres has answered.
 */
import { PgError, SqlState } from '../shared/errors.js';
import {
  BackendCode,
  buildCopyFail,
  decodeCommandComplete,
  decodeDataRow,
  decodeErrorResponse,
  type TransactionStatus,
} from '../protocol/index.js';
import { canceled, type CancelFlag } from './cancel-flag.js';
import { parseCommandTag } from './command-tag.js';
import type { ColumnType, TypeCatalog } from './query-types.js';
import { refusesPrefix, request, RESET_ENDS_AT, unprefixed, type Reset } from './query-reset.js';
import { describedBy, NO_COLUMNS, type Described } from './row-descriptions.js';
import { cancelUpstream, ignore, noteParameterStatus, type UpstreamSession } from './session.js';

/** One row: each value the text Postgres printed, or null. */
export type Row = (string | null)[];

/** A result column: its (unique) name and type. */
export interface Column {
  name: string;
  type: ColumnType;
}

const COPY_FAIL = buildCopyFail('COPY FROM STDIN is not available over REST');

function copyRefused(): PgError {
  return new PgError(SqlState.FeatureNotSupported, 'COPY … TO STDOUT / FROM STDIN is not available over the REST API', {
    hint: 'use SELECT over REST, or COPY over the Postgres wire protocol (psql \\copy)',
  });
}

function lost(): PgError {
  return new PgError(SqlState.ConnectionFailure, 'upstream Postgres unavailable: the connection closed during the statement');
}

/**
 * How long a cancelled statement may take to end before its session is closed instead: a
 * backend blocked in something that does not check for interrupts must not hold the session.
 */
const CANCEL_GRACE_MS = 5_000;

/** A statement whose rows are read batch by batch. */
export class RunningStatement {
  /** Its columns, once its RowDescription (or its end) has come. */
  private described: Described | undefined;
  private buffered: Row[] = [];
  private rowsRead = 0;
  private tag: string | null = null;
  private error: PgError | undefined;
  private copy = false;
  private status: TransactionStatus | undefined;
  /** While the answer to RESET ALL arrives: the message that ends it. */
  private skipUntil: number | undefined;
  /** Whether error positions count from the reset in front of the statement. */
  private readonly prefixed: boolean;
  private abandoned = false;
  /** Set once the statement is being ended early: rows are dropped as they arrive. */
  private cancelling: Promise<void> | undefined;
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly session: UpstreamSession,
    private readonly batchRows: number,
    reset: Reset,
    /** The statement cannot change a setting: done without an error, it leaves the session clean. */
    private readonly settingFree: boolean,
  ) {
    this.skipUntil = RESET_ENDS_AT[reset];
    this.prefixed = reset === 'prefix';
  }

  /**
   * Sends `sql` and waits for its columns and first batch of at most `batchRows` rows (or its
   * end), so an error raised before any row is thrown here, while the answer's status can still
   * say so. `columns` are then known. When `stop` is raised (before or after this resolves), the
   * statement is cancelled (see `cancel`) and ends with 57014. `settingFree`: the policy found
   * that the statement cannot change a setting (Decision.settingFree).
   */
  static async start(
    session: UpstreamSession,
    sql: string,
    types: TypeCatalog,
    batchRows: number,
    stop?: CancelFlag,
    settingFree = false,
  ): Promise<{ statement: RunningStatement; columns: Column[]; firstRows: Row[] }> {
    if (stop?.cancelled) throw canceled();
    const reset: Reset = !session.needsReset ? 'none' : !session.readingChanged ? 'prefix' : 'alone';
    let statement = await RunningStatement.send(session, sql, batchRows, reset, stop, settingFree);
    if (reset === 'prefix' && statement.error && refusesPrefix(statement.error) && statement.reusable) {
      if (stop?.cancelled) throw canceled();
      statement = await RunningStatement.send(session, sql, batchRows, 'alone', stop, settingFree);
    }
    if (statement.status !== undefined && statement.error) throw statement.error;
    const { wanted, names } = statement.described ?? NO_COLUMNS;
    const typed = types.known(wanted) ?? (await types.describe(wanted));
    const columns = typed.map((type, i) => ({ name: names[i] ?? '', type }));
    return { statement, columns, firstRows: statement.take(batchRows) };
  }

  /** Writes the batch and waits for the statement's columns and first batch of rows, or its end. */
  private static async send(session: UpstreamSession, sql: string, batchRows: number, reset: Reset, stop: CancelFlag | undefined, settingFree: boolean): Promise<RunningStatement> {
    const statement = new RunningStatement(session, batchRows, reset, settingFree);
    statement.listen();
    session.needsReset = true;
    session.socket.write(request(sql, reset));
    stop?.onCancel(() => void statement.cancel());
    await statement.until(() => statement.status !== undefined || (statement.described !== undefined && statement.buffered.length >= batchRows));
    // The session goes back to its pool only once a cancel is sent: it could reach the next statement
    // otherwise. (Awaited only when there is one: an await of nothing still costs a turn.)
    if (statement.cancelling) await statement.cancelling;
    return statement;
  }

  /** True once Postgres completed the statement (ReadyForQuery) and every row, and its error if any, was handed out. */
  get done(): boolean {
    return this.status !== undefined && this.buffered.length === 0 && this.error === undefined;
  }

  /** Whether the session can serve another statement (not closed early, outside a transaction). */
  get reusable(): boolean {
    return this.status === 'I' && !this.abandoned && !this.session.socket.destroyed;
  }

  /** Command tag verb (`SELECT`, `INSERT`, `CREATE TABLE`) and its count (null when the tag has none); set when done. */
  get outcome(): { command: string | null; rowCount: number | null } {
    if (this.tag === null) return { command: null, rowCount: null };
    const parsed = parseCommandTag(this.tag);
    // SHOW and EXPLAIN return rows under a tag without a count: count what was returned.
    if (parsed.command === 'SELECT' || (this.described?.names.length ?? 0) > 0) parsed.rowCount = this.rowsRead;
    return parsed;
  }

  /** The next batch of at most `maxRows` rows; empty when done. Throws a statement's late error. */
  async next(maxRows: number): Promise<Row[]> {
    await this.until(() => this.buffered.length > 0 || this.status !== undefined);
    if (this.cancelling) await this.cancelling;
    if (this.buffered.length === 0 && this.error) {
      const error = this.error;
      this.error = undefined; // reported once: the statement is done now
      throw error;
    }
    return this.take(maxRows);
  }

  /**
   * Ends the statement early (row cap reached, client gone, cancel asked for): Postgres is sent a
   * CancelRequest for its backend, the rows not yet handed out and those still arriving are
   * dropped, and this resolves once Postgres has ended the statement — or once the session is
   * closed, when Postgres cannot be reached or does not end it within CANCEL_GRACE_MS. It
   * resolves only after the CancelRequest was delivered, so that it cannot hit the session's next
   * statement (Postgres ignores one that arrives while the backend is idle). The statement then
   * reports 57014, Postgres' error or the same one made here if it had already finished.
   */
  cancel(): Promise<void> {
    this.cancelling ??= this.cancelNow();
    return this.cancelling;
  }

  private async cancelNow(): Promise<void> {
    this.buffered = [];
    if (this.status !== undefined) {
      this.error ??= canceled();
      return;
    }
    // Postgres blocked on a full socket checks for the cancel only once it can send again.
    this.session.socket.resume();
    const giveUp = () => {
      this.abandoned = true;
      this.finish(canceled(), undefined);
      this.session.socket.destroy();
      this.wake();
    };
    const timer = setTimeout(giveUp, CANCEL_GRACE_MS);
    try {
      if (!(await cancelUpstream(this.session))) giveUp();
      await this.until(() => this.status !== undefined);
    } finally {
      clearTimeout(timer);
    }
    this.error ??= canceled();
  }

  private take(maxRows: number): Row[] {
    const rows = this.buffered.length <= maxRows ? this.buffered : this.buffered.slice(0, maxRows);
    this.buffered = this.buffered.length <= maxRows ? [] : this.buffered.slice(maxRows);
    this.rowsRead += rows.length;
    if (this.buffered.length < this.batchRows && this.session.socket.isPaused()) this.session.socket.resume();
    return rows;
  }

  /** Resolves once `ready()` holds; checked again on every message and on close. Several may wait at once (a reader and a cancel). */
  private until(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = () => {
        if (!ready()) return;
        this.waiters.delete(waiter);
        resolve();
      };
      this.waiters.add(waiter);
    });
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /**
   * Takes the session's data and its close until the statement ends (UpstreamSession.sink and
   * onGone: no event listener is added and removed per statement).
   */
  private listen(): void {
    const session = this.session;
    session.sink = (chunk: Buffer) => {
      try {
        session.reader.push(chunk, this.onFrame);
      } catch (err: unknown) {
        this.finish(err instanceof PgError ? err : lost(), undefined);
        session.socket.destroy();
      }
      if (this.buffered.length >= this.batchRows && this.status === undefined && !this.cancelling) session.socket.pause();
      this.wake();
    };
    session.onGone = () => {
      this.finish(lost(), undefined);
      this.wake();
    };
  }

  /** Gives the session's data and close back (the statement has ended). */
  private detach(): void {
    this.session.sink = ignore;
    this.session.onGone = ignore;
  }

  private finish(error: PgError | undefined, status: TransactionStatus | undefined): void {
    if (this.status !== undefined) return;
    this.error ??= error;
    this.status = status ?? 'E';
    this.session.status = this.status;
    // Its reset (if any) and the statement went through, and the statement changed no setting.
    // Anything else leaves `needsReset` as `send` set it: a failed Query takes its reset with it.
    if (this.settingFree && this.error === undefined && this.status === 'I' && !this.cancelling) this.session.needsReset = false;
    this.detach();
  }

  private readonly onFrame = (code: number, frame: Buffer): void => {
    if (code === BackendCode.ParameterStatus) return noteParameterStatus(this.session, frame);
    if (this.skipUntil !== undefined) {
      // The answer to RESET ALL: nothing to show unless it failed. A failed reset in the same
      // Query skips the statement too; Postgres's ReadyForQuery, handled below, then ends both.
      if (code === BackendCode.ErrorResponse) {
        this.error = decodeErrorResponse(frame);
        if (this.skipUntil === BackendCode.CommandComplete) this.skipUntil = undefined;
      }
      if (code === this.skipUntil) this.skipUntil = undefined;
      return;
    }
    switch (code) {
      case BackendCode.DataRow:
        if (!this.cancelling) this.buffered.push(decodeDataRow(frame));
        return;
      case BackendCode.RowDescription:
        this.described = describedBy(frame);
        return;
      case BackendCode.CommandComplete:
        this.tag = decodeCommandComplete(frame);
        return;
      case BackendCode.ErrorResponse: {
        const error = decodeErrorResponse(frame);
        this.error ??= this.prefixed ? unprefixed(error) : error;
        return;
      }
      case BackendCode.CopyInResponse:
        this.copy = true;
        this.session.socket.write(COPY_FAIL);
        return;
      case BackendCode.CopyOutResponse:
        this.copy = true;
        return;
      case BackendCode.ReadyForQuery:
        this.described ??= NO_COLUMNS;
        return this.finish(this.copy ? copyRefused() : undefined, String.fromCharCode(frame[5]!) as TransactionStatus);
      default:
        // EmptyQueryResponse, CopyData/Done, notices.
        return;
    }
  };
}
