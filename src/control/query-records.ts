/**
 * Queries in the control plane: one row per async query (its state, its columns, where its result
 * stands) and per recorded `POST /query/` (the history: status, timing, rows, error). Any instance
 * answers for any query from here. Every lookup and listing takes a `QueryOwner`: the user, and
 * optionally the one key whose queries alone are seen (a scoped key).
 *
 * A running query names its *runner*: the process running it, which holds the session advisory
 * lock (RUNNER_LOCK_CLASS, runner) for as long as it lives (runner-channel.ts) and writes a
 * heartbeat every few seconds. A running query whose runner's lock is free, or whose heartbeat
 * stopped, lost its process: whoever notices first (a status read, a listing, any instance's
 * sweep) marks it failed.
 */
import type { ValueEncoding } from '../upstream/query-types.js';
import { query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';

export type QueryStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** Whose queries a request may see: the user's, or (`keyId` set) only those one key ran. */
export interface QueryOwner {
  user: string;
  keyId: string | null;
}

/** A result column as stored: its name, its type's name, and how its values become JSON. */
export interface StoredColumn {
  name: string;
  type: string;
  encoding: ValueEncoding;
}

/** An error as the API shows it. */
export interface ErrorJson {
  code: string;
  message: string;
  detail: string | null;
  hint: string | null;
  position: number | null;
}

export interface QueryRecord {
  id: string;
  user: string;
  keyId: string;
  async: boolean;
  queryString: string;
  /** The history keeps only the beginning of a very long statement sent without async. */
  queryTruncated: boolean;
  status: QueryStatus;
  submittedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  rowCount: number | null;
  command: string | null;
  fields: StoredColumn[] | null;
  error: ErrorJson | null;
  /** Rows of the result stored so far (the whole result once it succeeded). */
  rowsStored: number;
  /** Compressed bytes of the result kept now; 0 once it was deleted. */
  resultBytes: number;
  runner: number | null;
}

/** The advisory lock class of runners ("rbaq"): (class, runner id) is held by the live process. */
export const RUNNER_LOCK_CLASS = 0x72626171;
/** A running query whose heartbeat is older than this lost its process. */
const STALE_SECONDS = 60;

const Q = `${CONTROL_SCHEMA}.queries`;
const PAGES = `${CONTROL_SCHEMA}.query_pages`;

interface Row {
  id: string;
  user_name: string;
  key_id: string;
  async: boolean;
  query_string: string;
  query_truncated: boolean;
  status: QueryStatus;
  submitted_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  row_count: string | null;
  command: string | null;
  fields: StoredColumn[] | null;
  error: ErrorJson | null;
  rows_stored: string;
  result_bytes: string;
  runner: string | null;
}

/** The columns of a query's row that make a QueryRecord (toRecord). */
export const COLUMNS = `id, user_name, key_id, async, query_string, query_truncated, status, submitted_at, started_at, finished_at,
  row_count, command, fields, error, rows_stored, result_bytes, runner`;

/** A row of `COLUMNS` as a QueryRecord. */
export function toRecord(r: Row): QueryRecord {
  return {
    id: r.id,
    user: r.user_name,
    keyId: r.key_id,
    async: r.async,
    queryString: r.query_string,
    queryTruncated: r.query_truncated,
    status: r.status,
    submittedAt: r.submitted_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    rowCount: r.row_count === null ? null : Number(r.row_count),
    command: r.command,
    fields: r.fields,
    error: r.error,
    rowsStored: Number(r.rows_stored),
    resultBytes: Number(r.result_bytes),
    runner: r.runner === null ? null : Number(r.runner),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `id` is shaped like a query id (anything else is simply not found). */
export function isQueryId(id: string): boolean {
  return UUID.test(id);
}

/** The owner filter of every lookup: `$1` the user, `$2` the key (null: any of the user's keys). */
const OWNED = `user_name = $1 AND ($2::text IS NULL OR key_id = $2)`;

/** A new async query, queued. */
export async function insertQueued(db: Queryable, q: { user: string; keyId: string; queryString: string }): Promise<QueryRecord> {
  const res = await query<Row>(db, `INSERT INTO ${Q} (user_name, key_id, async, query_string, status) VALUES ($1, $2, true, $3, 'queued') RETURNING ${COLUMNS}`, [
    q.user,
    q.keyId,
    q.queryString,
  ]);
  return toRecord(res.rows[0]!);
}

/** An async query the control plane answered at once (`CREATE SCHEMA` of a repo): it has succeeded already. */
export async function insertDone(db: Queryable, q: { user: string; keyId: string; queryString: string; command: string }): Promise<QueryRecord> {
  const res = await query<Row>(
    db,
    `INSERT INTO ${Q} (user_name, key_id, async, query_string, status, started_at, finished_at, command, fields)
     VALUES ($1, $2, true, $3, 'succeeded', now(), now(), $4, '[]') RETURNING ${COLUMNS}`,
    [q.user, q.keyId, q.queryString, q.command],
  );
  return toRecord(res.rows[0]!);
}

/** The query `id` of `owner`, or undefined (another user's query is not found either). */
export async function getQuery(db: Queryable, id: string, owner: QueryOwner): Promise<QueryRecord | undefined> {
  if (!isQueryId(id)) return undefined;
  const res = await query<Row>(db, `SELECT ${COLUMNS} FROM ${Q} WHERE ${OWNED} AND id = $3`, [owner.user, owner.keyId, id]);
  return res.rows[0] ? toRecord(res.rows[0]) : undefined;
}

/** `owner`'s queries, newest first; only those in `status` when given. */
export async function listQueries(db: Queryable, owner: QueryOwner, filter: { status?: QueryStatus | undefined; limit: number }): Promise<QueryRecord[]> {
  const res = await query<Row>(db, `SELECT ${COLUMNS} FROM ${Q} WHERE ${OWNED} AND ($3::text IS NULL OR status = $3) ORDER BY submitted_at DESC, id LIMIT $4`, [
    owner.user,
    owner.keyId,
    filter.status ?? null,
    filter.limit,
  ]);
  return res.rows.map(toRecord);
}

/** What `DELETE /queries/<id>` did. */
export type Removal = { kind: 'cancelled'; record: QueryRecord } | { kind: 'deleted' } | { kind: 'missing' };

const CANCELLED: ErrorJson = { code: '57014', message: 'canceling statement due to user request', detail: null, hint: null, position: null };

/**
 * Cancels `owner`'s query `id` if it is queued or running (its runner is told on the queries
 * channel, see runner-channel.ts), else deletes it with its result.
 */
export async function removeQuery(db: Queryable, id: string, owner: QueryOwner): Promise<Removal> {
  if (!isQueryId(id)) return { kind: 'missing' };
  const cancelled = await query<Row>(
    db,
    `UPDATE ${Q} SET status = 'cancelled', finished_at = now(), error = $4
      WHERE ${OWNED} AND id = $3 AND status IN ('queued', 'running') RETURNING ${COLUMNS}`,
    [owner.user, owner.keyId, id, JSON.stringify(CANCELLED)],
  );
  if (cancelled.rows[0]) return { kind: 'cancelled', record: toRecord(cancelled.rows[0]) };
  const deleted = await query(db, `DELETE FROM ${Q} WHERE ${OWNED} AND id = $3`, [owner.user, owner.keyId, id]);
  return deleted.rowCount ? { kind: 'deleted' } : { kind: 'missing' };
}

/** Whether the runner of `id` still runs its statement (a cancel waits for it to end). */
export async function stillRunning(db: Queryable, id: string): Promise<boolean> {
  const res = await query<{ runner: string | null }>(db, `SELECT runner FROM ${Q} WHERE id = $1`, [id]);
  return res.rows[0]?.runner != null;
}

const INTERRUPTED: ErrorJson = {
  code: '57P01',
  message: 'the query was interrupted: the server running it stopped or lost its connection to the database',
  detail: null,
  hint: 'run it again',
  position: null,
};

/**
 * Marks failed the running queries whose process is gone (its runner lock free, or its heartbeat
 * stale): every one when `scope` is empty, else `scope.id`'s, or `scope.user`'s. Returns how
 * many, and the upstream backends their statements were running on: nobody reads those any more,
 * so the caller cancels them. (`pg_try_advisory_xact_lock` takes the lock only when nobody holds it, and
 * only until this statement's end: a live runner's lock is never taken.)
 */
export async function failOrphans(db: Queryable, scope: { id?: string; user?: string } = {}): Promise<{ failed: number; backends: { processId: number; secretKey: number }[] }> {
  const res = await query<{ backend_pid: number | null; backend_key: number | null }>(
    db,
    `WITH orphans AS (
       SELECT id, backend_pid, backend_key FROM ${Q}
        WHERE status = 'running' AND ($1::uuid IS NULL OR id = $1) AND ($2::text IS NULL OR user_name = $2)
          AND (heartbeat_at < now() - make_interval(secs => ${STALE_SECONDS}) OR pg_try_advisory_xact_lock(${RUNNER_LOCK_CLASS}, runner::int))
        FOR UPDATE
     )
     UPDATE ${Q} q SET status = 'failed', finished_at = now(), runner = NULL, backend_pid = NULL, backend_key = NULL, error = $3
       FROM orphans o WHERE q.id = o.id
     RETURNING o.backend_pid, o.backend_key`,
    [scope.id ?? null, scope.user ?? null, JSON.stringify(INTERRUPTED)],
  );
  const backends = res.rows.flatMap((r) => (r.backend_pid === null || r.backend_key === null ? [] : [{ processId: r.backend_pid, secretKey: r.backend_key }]));
  return { failed: res.rows.length, backends };
}

/** Users with queued queries and fewer than `maxRunning` running, longest waiting first: where a slot is free to start one. */
export async function usersWaiting(db: Queryable, maxRunning: number): Promise<string[]> {
  const res = await query<{ user_name: string }>(
    db,
    `SELECT q.user_name FROM ${Q} q WHERE q.status = 'queued' GROUP BY q.user_name
     HAVING (SELECT count(*) FROM ${Q} r WHERE r.user_name = q.user_name AND r.status = 'running') < $1
     ORDER BY min(q.submitted_at) LIMIT 1000`,
    [maxRunning],
  );
  return res.rows.map((r) => r.user_name);
}

/** The history retention: queries submitted more than `days` ago, finished, are deleted with their results. */
export async function deleteOldQueries(db: Queryable, days: number): Promise<number> {
  const res = await query(db, `DELETE FROM ${Q} WHERE submitted_at < now() - make_interval(days => $1) AND status NOT IN ('queued', 'running')`, [days]);
  return res.rowCount ?? 0;
}

/**
 * Results of queries that ended more than `ttlMs` ago are deleted (the records stay, for the
 * history); with no history kept (`keepRecords` false), the records go with them.
 */
export async function expireResults(db: Queryable, ttlMs: number, keepRecords: boolean): Promise<number> {
  const old = `SELECT id FROM ${Q} WHERE async AND status NOT IN ('queued', 'running') AND finished_at < now() - make_interval(secs => $1::float8 / 1000)`;
  if (!keepRecords) return (await query(db, `DELETE FROM ${Q} WHERE id IN (${old})`, [ttlMs])).rowCount ?? 0;
  await query(db, `DELETE FROM ${PAGES} WHERE query_id IN (${old} AND result_bytes > 0)`, [ttlMs]);
  return (await query(db, `UPDATE ${Q} SET result_bytes = 0 WHERE id IN (${old} AND result_bytes > 0)`, [ttlMs])).rowCount ?? 0;
}
