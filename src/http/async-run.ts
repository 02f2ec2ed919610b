/**
 * One run of an async query: its statement on an upstream session of the user's own role (the
 * same RunningStatement as `POST /query/`), its rows written as result pages while it runs. The
 * statement is read only as fast as pages are written (its socket paused meanwhile), so a run
 * holds at most a page and a batch of rows in memory whatever the size of its result. Its end —
 * succeeded, failed, cancelled — is written to its row; a result that did not succeed is deleted.
 */
import type { ControlPlane, Principal } from '../control/control-plane.js';
import { dropResults, makeRoom, writePage } from '../control/query-pages.js';
import type { ErrorJson, StoredColumn } from '../control/query-records.js';
import { endRun, setBackend, setColumns } from '../control/query-runs.js';
import { errorInOriginal } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { CancelFlag } from '../upstream/cancel-flag.js';
import { RunningStatement, type Row } from '../upstream/query-run.js';
import type { TypeCatalog } from '../upstream/query-types.js';
import type { SessionPool } from '../upstream/session-pool.js';
import { errorObject, shownError } from './errors.js';
import { ran, type AuditSource, type Run } from './statement-decision.js';

/** Rows per read of the statement. */
const BATCH_ROWS = 1_000;
/** A page is written once it holds this many rows or this many characters of values, whichever comes first. */
const PAGE_ROWS = 10_000;
const PAGE_CHARS = 1024 * 1024;

export interface RunDeps {
  control: ControlPlane;
  /** Upstream sessions of async statements (their own statement timeout and silence watch). */
  sessions: SessionPool;
  sessionSettings: Readonly<Record<string, string>>;
  types: TypeCatalog;
  /** Config asyncResultMaxBytes: one user's stored results at most. */
  maxBytes: number;
  log: Logger;
}

/** One query to run, and what stops it. */
export interface RunRequest {
  id: string;
  principal: Principal;
  queryString: string;
  /** The policy's decision: what to send upstream, or the command tag of what the control plane did itself. Thrown: a denial. */
  decide(): Run | { done: string } | Promise<Run | { done: string }>;
  source: AuditSource;
  /** This process's runner id (the row's `runner`). */
  runner: number;
  /** Raised to end the run early (a cancel, the service stopping). */
  stop: CancelFlag;
  /** Why it was stopped, when not by a user's cancel (the service stopped, the runner lost its lock). */
  stopReason(): PgError | undefined;
}

function tooLarge(maxBytes: number): PgError {
  return new PgError(SqlState.ConfigurationLimitExceeded, `the result is too large to keep: your results may take ${maxBytes} bytes (compressed) in all`, {
    hint: 'select fewer rows or columns, delete results you no longer need (DELETE /api/v1beta/queries/<id>), or ask the operator to raise asyncResultMaxBytes',
  });
}

/** Writes the rows of one statement as pages, keeping the user's results within `maxBytes`. */
class PageWriter {
  private rows: Row[] = [];
  private chars = 0;
  private written = 0;

  constructor(
    private readonly deps: RunDeps,
    private readonly req: RunRequest,
  ) {}

  /** Adds rows; writes a page when one is full. False when the query is no longer this runner's to write. */
  async add(rows: readonly Row[]): Promise<boolean> {
    for (const row of rows) {
      this.rows.push(row);
      for (const v of row) if (v !== null) this.chars += v.length;
      if ((this.rows.length >= PAGE_ROWS || this.chars >= PAGE_CHARS) && !(await this.flush())) return false;
    }
    return true;
  }

  /** Writes the rows held, if any. Throws 53400 when they do not fit in the user's bytes. */
  async flush(): Promise<boolean> {
    if (this.rows.length === 0) return true;
    const { control, maxBytes } = this.deps;
    const stored = await writePage(control.admin, this.req.id, this.req.runner, this.written, this.rows);
    if (!stored) return false;
    this.written += this.rows.length;
    this.rows = [];
    this.chars = 0;
    if (stored.userBytes > maxBytes && !(await makeRoom(control.admin, stored.user, stored.userBytes - maxBytes))) throw tooLarge(maxBytes);
    return true;
  }
}

/** The columns as stored with the query, from the statement's. */
function storedColumns(columns: readonly { name: string; type: { name: string; encoding: StoredColumn['encoding'] } }[]): StoredColumn[] {
  return columns.map((c) => ({ name: c.name, type: c.type.name, encoding: c.type.encoding }));
}

/**
 * Runs the statement and writes its result: its outcome, or undefined when the query stopped being
 * this runner's to write (cancelled, failed or deleted elsewhere: its row already says how it ended).
 */
async function execute(deps: RunDeps, req: RunRequest, run: Run): Promise<{ command: string | null; rowCount: number | null } | undefined> {
  const { control, sessions, sessionSettings, types } = deps;
  // The user's own role, or a scoped key's: only the key's scope in Postgres too.
  const role = req.principal.role;
  const session = sessions.takeIdle(role, sessionSettings) ?? (await sessions.acquire(role, sessionSettings));
  let statement: RunningStatement | undefined;
  try {
    if (!(await setBackend(control.admin, req.id, req.runner, session))) return undefined;
    const started = await RunningStatement.start(session, run.sql, types, BATCH_ROWS, req.stop, run.settingFree);
    statement = started.statement;
    const pages = new PageWriter(deps, req);
    let mine = await setColumns(control.admin, req.id, req.runner, storedColumns(started.columns));
    let rows = started.firstRows;
    while (mine) {
      mine = await pages.add(rows);
      if (!mine || statement.done) break;
      rows = await statement.next(BATCH_ROWS);
    }
    if (mine) mine = await pages.flush();
    if (!mine) return undefined;
    const outcome = statement.outcome;
    ran(control, req.source, req.principal, req.queryString, outcome.command, outcome.rowCount ?? 0);
    return outcome;
  } finally {
    if (statement && !statement.done) await statement.cancel();
    sessions.release(role, sessionSettings, session, statement?.reusable ?? (session.status === 'I' && !session.socket.destroyed));
  }
}

/** Decides, runs and records `req` to its end; never throws. */
export async function runAsync(deps: RunDeps, req: RunRequest): Promise<void> {
  const { control, log } = deps;
  let run: Run | undefined;
  let outcome: { command: string | null; rowCount: number | null } | undefined;
  let failure: unknown;
  try {
    const decided = await req.decide();
    if ('done' in decided) {
      // The control plane did the work (CREATE SCHEMA of a repo): a command without rows.
      outcome = (await setColumns(control.admin, req.id, req.runner, [])) ? { command: decided.done, rowCount: null } : undefined;
    } else {
      run = decided;
      outcome = await execute(deps, req, run);
    }
  } catch (err: unknown) {
    // On Citus, a join of repos on different nodes is named (as POST /query/ says it).
    failure = (err instanceof PgError && run && (await control.explainError(err, run.sql).catch(() => undefined))) || err;
  }
  try {
    if (outcome) {
      await endRun(control.admin, req.id, req.runner, { status: 'succeeded', ...outcome });
      return;
    }
    const stopped = req.stopReason() ?? new PgError(SqlState.QueryCanceled, 'canceling statement due to user request');
    const error = failure === undefined ? errorObject(stopped) : errorOf(deps, req, run, failure);
    const status = await endRun(control.admin, req.id, req.runner, { status: 'failed', error });
    if (status !== undefined) await dropResults(control.admin, [req.id]);
  } catch (err: unknown) {
    // The control plane is unreachable: the row stays running, and is marked failed once the
    // runner's heartbeat stops (or its lock goes).
    log.warn({ err, query: req.id }, 'recording the end of an async query failed');
  }
}

/** The error a failed run shows: its position in the text the client sent, a stop's own reason, internals hidden. */
function errorOf(deps: RunDeps, req: RunRequest, run: Run | undefined, err: unknown): ErrorJson {
  const reason = req.stopReason();
  if (reason && err instanceof PgError && err.code === SqlState.QueryCanceled) return errorObject(reason);
  let shown = shownError(err, `query ${req.id}`);
  if (shown !== err) deps.log.error({ err, query: req.id }, 'async query failed: internal error');
  if (run?.edits !== undefined && shown.position !== undefined) shown = errorInOriginal(shown, run.sql, req.queryString, run.edits);
  return errorObject(shown);
}
