/**
 * The query history of `POST /query/` without async: every statement's status, timing, rows and
 * error, kept in pages (history-pages.ts) that `GET /queries/` lists beside the async queries.
 * The request path only appends to a bounded buffer (no round trip, no promise); a background
 * writer writes the buffer in batches (one INSERT of a page per user and key, every second or
 * every 1,000 entries, and at close), as the audit log and the usage meter do. While the
 * control plane does not answer, rows wait up to the buffer's bound; past it they are dropped
 * and a warning says how many.
 */
import type pg from 'pg';
import { PgError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { BackgroundWriter } from './background-writer.js';
import { HISTORY_SQL_MAX_CHARS, insertEntries, type HistoryEntry } from './history-pages.js';

const FLUSH_MS = 1_000;
/** A page's worth (history-pages.ts): written at once rather than waiting for the tick. */
const BATCH_ROWS = 1_000;
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

  /**
   * Writes the entries buffered when it starts, no more: entries that come meanwhile wait for the
   * next tick, so a busy service writes pages of hundreds of entries, not one small page per
   * round trip.
   */
  private async write(): Promise<void> {
    for (let left = this.buffer.length; left > 0; ) {
      const batch = this.buffer.splice(0, Math.min(left, 2_000));
      left -= batch.length;
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
