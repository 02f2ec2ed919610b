/**
 * The query history of `POST /query/` without async: every statement's status, timing, rows and
 * error, kept as rows of `queries` (query-records.ts) beside the async ones, so `GET /queries/`
 * lists both. The request path only appends to a bounded buffer (no round trip, no promise); a
 * background writer inserts the buffer in batches (one INSERT … FROM unnest, every second or
 * every BATCH_ROWS rows, and at close), as the audit log and the usage meter do. While the
 * control plane does not answer, rows wait up to the buffer's bound; past it they are dropped
 * and a warning says how many.
 */
import type pg from 'pg';
import { PgError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { BackgroundWriter } from './background-writer.js';
import { query } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';
import type { ErrorJson } from './query-records.js';

/** One finished `POST /query/`. Times are `Date.now()` values (no Date made per request). */
export interface HistoryEntry {
  user: string;
  keyId: string;
  queryString: string;
  submittedAt: number;
  finishedAt: number;
  status: 'succeeded' | 'failed' | 'cancelled';
  command: string | null;
  rowCount: number | null;
  error: ErrorJson | null;
}

/** Statements longer than this are kept cut (and marked so): the history is for reading, not for replaying scripts. */
export const HISTORY_SQL_MAX_CHARS = 65_536;
const FLUSH_MS = 1_000;
const BATCH_ROWS = 500;
/** Rows (and characters of statement text) kept in memory while the control plane does not answer. */
const BUFFER_ROWS = 20_000;
const BUFFER_CHARS = 32 * 1024 * 1024;

export class QueryHistory {
  private buffer: HistoryEntry[] = [];
  private chars = 0;
  private dropped = 0;
  private failing = false;
  private readonly writer: BackgroundWriter;

  constructor(
    private readonly admin: pg.Pool,
    private readonly log: Logger,
  ) {
    this.writer = new BackgroundWriter(FLUSH_MS, () => this.write());
  }

  /** Queues one entry; returns at once. */
  record(entry: HistoryEntry): void {
    const chars = Math.min(entry.queryString.length, HISTORY_SQL_MAX_CHARS);
    if (this.buffer.length >= BUFFER_ROWS || this.chars + chars > BUFFER_CHARS) {
      this.dropped++;
      return;
    }
    this.buffer.push(entry);
    this.chars += chars;
    if (this.buffer.length % BATCH_ROWS === 0) this.writer.kick();
  }

  /** Resolves once every entry recorded so far is written (or given up on). */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  async close(): Promise<void> {
    await this.writer.close();
    if (this.buffer.length + this.dropped > 0) this.log.warn({ lost: this.buffer.length + this.dropped }, 'query history rows lost at stop: the control plane did not answer');
  }

  private async write(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, 2_000);
      for (const e of batch) this.chars -= Math.min(e.queryString.length, HISTORY_SQL_MAX_CHARS);
      try {
        await insertEntries(this.admin, batch);
      } catch (err: unknown) {
        if (err instanceof PgError && /^2[23]/.test(err.code)) {
          // Rows Postgres refuses now it will refuse again.
          this.log.warn({ err, dropped: batch.length }, 'query history rows refused by the control plane were dropped');
          continue;
        }
        const room = Math.max(0, BUFFER_ROWS - this.buffer.length);
        const kept = batch.slice(0, room);
        this.buffer.unshift(...kept);
        for (const e of kept) this.chars += Math.min(e.queryString.length, HISTORY_SQL_MAX_CHARS);
        this.dropped += batch.length - kept.length;
        if (!this.failing) this.log.warn({ err, pending: this.buffer.length }, 'writing the query history failed; rows are kept in memory and written when the control plane answers');
        this.failing = true;
        return;
      }
      if (this.failing || this.dropped > 0) {
        this.log.warn({ dropped: this.dropped }, this.dropped > 0 ? 'the query history is written again; some rows were dropped meanwhile' : 'the query history is written again');
        this.failing = false;
        this.dropped = 0;
      }
    }
  }
}

/** Text a column can hold: no NUL (Postgres text refuses it). */
function clean(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text;
}

/** One INSERT for a batch; entries of a user deleted meanwhile are skipped. */
async function insertEntries(db: Pick<pg.Pool, 'query'>, rows: readonly HistoryEntry[]): Promise<void> {
  await query(
    db,
    `INSERT INTO ${CONTROL_SCHEMA}.queries
       (user_name, key_id, async, query_string, query_truncated, status, submitted_at, started_at, finished_at, row_count, command, error)
     SELECT v.user_name, v.key_id, false, v.query_string, v.truncated, v.status, v.submitted_at, v.submitted_at, v.finished_at, v.row_count, v.command, v.error
       FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::text[], $6::timestamptz[], $7::timestamptz[], $8::bigint[], $9::text[], $10::jsonb[])
            AS v(user_name, key_id, query_string, truncated, status, submitted_at, finished_at, row_count, command, error)
       JOIN ${CONTROL_SCHEMA}.users u ON u.name = v.user_name`,
    [
      rows.map((r) => r.user),
      rows.map((r) => r.keyId),
      rows.map((r) => clean(r.queryString.length > HISTORY_SQL_MAX_CHARS ? r.queryString.slice(0, HISTORY_SQL_MAX_CHARS) : r.queryString)),
      rows.map((r) => r.queryString.length > HISTORY_SQL_MAX_CHARS),
      rows.map((r) => r.status),
      rows.map((r) => new Date(r.submittedAt)),
      rows.map((r) => new Date(r.finishedAt)),
      rows.map((r) => r.rowCount),
      rows.map((r) => (r.command === null ? null : clean(r.command))),
      rows.map((r) => (r.error === null ? null : JSON.stringify(r.error, (_k, v: unknown) => (typeof v === 'string' ? clean(v) : v)))),
    ],
  );
}
