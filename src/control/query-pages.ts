/**
 * The stored result of an async query: pages of rows in the unlogged `query_pages`, written while
 * the statement runs (so a reader can page through the first rows while the rest is still coming)
 * and compressed. A page holds each value as the text Postgres printed, or NULL:
 *
 *   per row: uint16 column count, then per value an int32 byte length (-1 = NULL) and its UTF-8
 *   bytes (the layout of a DataRow message), the whole page deflated.
 *
 * Each user's stored bytes are bounded (`asyncResultMaxBytes`): a page that takes them past the
 * bound first deletes the user's oldest finished results; when even that is not enough the query
 * fails with 53400 (see the runner).
 */
import { promisify } from 'node:util';
import { constants, deflateRaw, inflateRaw } from 'node:zlib';
import { PgError, SqlState } from '../shared/errors.js';
import type { Row } from '../upstream/query-run.js';
import { query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';

const Q = `${CONTROL_SCHEMA}.queries`;
const PAGES = `${CONTROL_SCHEMA}.query_pages`;

const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);
/** Fast rather than small: a page is written while its statement waits (measured: level 1 packs typical rows 4–6×). */
const DEFLATE = { level: constants.Z_BEST_SPEED };

/** The page's bytes before compression. */
export function encodePage(rows: readonly Row[]): Buffer {
  let size = 0;
  for (const row of rows) {
    size += 2;
    for (const v of row) size += 4 + (v === null ? 0 : Buffer.byteLength(v));
  }
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  for (const row of rows) {
    at = buf.writeUInt16BE(row.length, at);
    for (const v of row) {
      if (v === null) {
        at = buf.writeInt32BE(-1, at);
      } else {
        const n = buf.write(v, at + 4, 'utf8');
        buf.writeInt32BE(n, at);
        at += 4 + n;
      }
    }
  }
  return buf;
}

/** The rows of a page's bytes (encodePage's inverse). */
export function decodePage(buf: Buffer): Row[] {
  const rows: Row[] = [];
  let at = 0;
  while (at < buf.length) {
    const n = buf.readUInt16BE(at);
    at += 2;
    const row: Row = new Array<string | null>(n);
    for (let i = 0; i < n; i++) {
      const len = buf.readInt32BE(at);
      at += 4;
      if (len < 0) {
        row[i] = null;
      } else {
        row[i] = buf.toString('utf8', at, at + len);
        at += len;
      }
    }
    rows.push(row);
  }
  return rows;
}

/**
 * Appends a page of `rows` starting at row `firstRow` to `runner`'s running query `id`. Returns
 * the user's stored bytes with it, or undefined when the query is no longer this runner's to
 * write (cancelled, failed, deleted): the page was not written.
 */
export async function writePage(db: Queryable, id: string, runner: number, firstRow: number, rows: readonly Row[]): Promise<{ user: string; userBytes: number } | undefined> {
  const data = await deflate(encodePage(rows), DEFLATE);
  const res = await query<{ user_name: string; user_bytes: string }>(
    db,
    `WITH q AS (
       UPDATE ${Q} SET rows_stored = $3::bigint + $4::int, result_bytes = result_bytes + $6::bigint
        WHERE id = $1 AND runner = $2 AND status = 'running' RETURNING user_name
     ), page AS (
       INSERT INTO ${PAGES} (query_id, first_row, rows, data) SELECT $1::uuid, $3::bigint, $4::int, $5::bytea FROM q
     )
     SELECT q.user_name, (SELECT coalesce(sum(result_bytes), 0) FROM ${Q} WHERE user_name = q.user_name AND result_bytes > 0) + $6::bigint AS user_bytes FROM q`,
    [id, runner, firstRow, rows.length, data, data.length],
  );
  const row = res.rows[0];
  return row && { user: row.user_name, userBytes: Number(row.user_bytes) };
}

/**
 * Deletes `user`'s oldest finished results until `need` bytes are freed; false (and nothing
 * deleted) when all of them together are not enough.
 */
export async function makeRoom(db: Queryable, user: string, need: number): Promise<boolean> {
  const res = await query<{ id: string; result_bytes: string }>(
    db,
    `SELECT id, result_bytes FROM ${Q} WHERE user_name = $1 AND result_bytes > 0 AND status NOT IN ('queued', 'running') ORDER BY finished_at, id`,
    [user],
  );
  const victims: string[] = [];
  let freed = 0;
  for (const r of res.rows) {
    if (freed >= need) break;
    victims.push(r.id);
    freed += Number(r.result_bytes);
  }
  if (freed < need) return false;
  await dropResults(db, victims);
  return true;
}

/** Deletes the stored results of `ids` (the records stay). */
export async function dropResults(db: Queryable, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await query(db, `DELETE FROM ${PAGES} WHERE query_id = ANY($1::uuid[])`, [ids]);
  await query(db, `UPDATE ${Q} SET result_bytes = 0 WHERE id = ANY($1::uuid[])`, [ids]);
}

/** A stored page: its first row's number and its rows. */
export interface Page {
  firstRow: number;
  rows: Row[];
}

/** The page of `id` that holds row `row` (0-based), or undefined when none is stored. */
export async function pageAt(db: Queryable, id: string, row: number): Promise<Page | undefined> {
  const res = await query<{ first_row: string; rows: number; data: Buffer }>(
    db,
    `SELECT first_row, rows, data FROM ${PAGES} WHERE query_id = $1 AND first_row <= $2 ORDER BY first_row DESC LIMIT 1`,
    [id, row],
  );
  const found = res.rows[0];
  if (!found || Number(found.first_row) + found.rows <= row) return undefined;
  return { firstRow: Number(found.first_row), rows: decodePage(await inflate(found.data)) };
}

/** A result that should be stored and is not: Postgres restarted since (the pages' table is unlogged), or it was deleted just now. */
export function resultLost(id: string): PgError {
  return new PgError(SqlState.ObjectNotInPrerequisiteState, `the result of query ${id} is no longer stored`, {
    hint: 'results are deleted after asyncResultTtlMs, to make room for newer ones (asyncResultMaxBytes), and when the database restarts; run the query again',
  });
}
