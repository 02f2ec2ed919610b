/**
 * An async query's stored result, answered as `POST /query/` answers (result-formats.ts: JSON,
 * NDJSON or CSV, the same `fields` and exact values), from row `offset` for up to `limit` rows.
 * Pages are read one at a time as the answer is taken, so memory stays at a page whatever the
 * size of the result; while the query still runs, the rows already stored can be read.
 */
import { Readable } from 'node:stream';
import type pg from 'pg';
import { pageAt, resultLost, type Page } from '../control/query-pages.js';
import type { QueryRecord, StoredColumn } from '../control/query-records.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Column } from '../upstream/query-run.js';
import { createWriter, type ResultFormat } from './result-formats.js';

/** The columns as the writers take them. */
export function columnsOf(fields: readonly StoredColumn[] | null): Column[] {
  return (fields ?? []).map((f) => ({ name: f.name, type: { name: f.type, encoding: f.encoding } }));
}

function notReady(record: QueryRecord, why: string, hint: string): PgError {
  return new PgError(SqlState.ObjectNotInPrerequisiteState, `query ${record.id} ${why}`, { hint });
}

/** The rows `[offset, end)` that a request may read now, or the 409 (55000) that says why not. */
export function readableRange(record: QueryRecord, offset: number, limit: number | undefined): { offset: number; end: number } {
  if (!record.async) {
    throw notReady(record, 'ran without "async": its result was sent in its answer and not kept', 'send it with "async": true to keep its result');
  }
  switch (record.status) {
    case 'succeeded': {
      if (record.resultBytes === 0 && record.rowsStored > 0) throw resultLost(record.id);
      const end = limit === undefined ? record.rowsStored : Math.min(record.rowsStored, offset + limit);
      return { offset, end: Math.max(offset, end) };
    }
    case 'running':
      // The rows stored so far can be read; the end of the result is not known yet.
      if (limit !== undefined && offset + limit <= record.rowsStored) return { offset, end: offset + limit };
      throw notReady(
        record,
        `is still running: ${record.rowsStored} rows of its result are stored so far`,
        'poll GET /api/v1beta/queries/<id> until its status is "succeeded", or read the rows stored so far with ?offset= and ?limit= within them',
      );
    case 'queued':
      throw notReady(record, 'has not started yet (queued)', 'poll GET /api/v1beta/queries/<id> until its status is "succeeded"');
    case 'failed':
    case 'cancelled':
      throw notReady(record, `${record.status === 'failed' ? 'failed' : 'was cancelled'}: it has no result`, 'its error is in GET /api/v1beta/queries/<id>; run it again');
  }
}

/**
 * The answer: one string when the range is within one page (or empty), else a stream. Throws
 * 55000 when the first page is missing (the result is no longer stored); a page missing later ends
 * the stream with an error (an `error` member, or a cut CSV).
 */
export async function storedAnswer(
  admin: Pick<pg.Pool, 'query'>,
  record: QueryRecord,
  format: ResultFormat,
  range: { offset: number; end: number },
  onError: (err: unknown) => PgError,
): Promise<string | Readable> {
  const writer = createWriter(format, record.queryString, columnsOf(record.fields));
  const done = record.status === 'succeeded';
  const tail = () => writer.end({ command: done ? record.command : null, rowCount: done ? record.rowCount : null, truncated: false });
  if (range.offset >= range.end) return writer.head() + tail();
  const first = await pageAt(admin, record.id, range.offset);
  if (!first) throw resultLost(record.id);
  const slice = (page: Page, from: number) => page.rows.slice(from - page.firstRow, Math.min(page.rows.length, range.end - page.firstRow));
  if (first.firstRow + first.rows.length >= range.end) return writer.head() + writer.rows(slice(first, range.offset)) + tail();
  async function* pieces(): AsyncGenerator<string> {
    let page: Page | undefined = first;
    let at = range.offset;
    yield writer.head();
    try {
      while (at < range.end) {
        if (!page) throw resultLost(record.id);
        const rows = slice(page, at);
        yield writer.rows(rows);
        at += rows.length;
        page = at < range.end ? await pageAt(admin, record.id, at) : undefined;
      }
      yield tail();
    } catch (err: unknown) {
      const closing = writer.failed(onError(err));
      if (closing === undefined) throw err;
      yield closing;
    }
  }
  async function* nonEmpty(): AsyncGenerator<string> {
    // An empty chunk would read as "nothing more for now" and could stall the stream.
    for await (const piece of pieces()) if (piece.length) yield piece;
  }
  return Readable.from(nonEmpty(), { objectMode: false });
}
