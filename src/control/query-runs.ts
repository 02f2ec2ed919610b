/**
 * The runner's side of an async query's row (query-records.ts): claiming a queued query within
 * its user's limit of running ones, its columns, its heartbeat, and its end. Every write is
 * guarded by the runner's id and the running status, so a query cancelled, marked failed or
 * deleted meanwhile is never brought back.
 */
import type pg from 'pg';
import { inTransaction, query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';
import { COLUMNS, toRecord, type ErrorJson, type QueryRecord, type QueryStatus, type StoredColumn } from './query-records.js';

const Q = `${CONTROL_SCHEMA}.queries`;

/** The transaction lock class of a user's claims ("rbac"), so two instances never both take the last free slot. */
const CLAIM_LOCK_CLASS = 0x72626163;

/**
 * Starts `user`'s oldest queued query for `runner`, if fewer than `maxRunning` of theirs run: the
 * query, now running, or undefined.
 */
export async function claimQueued(admin: pg.Pool, user: string, runner: number, maxRunning: number): Promise<QueryRecord | undefined> {
  return inTransaction(admin, async (db) => {
    await db.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [CLAIM_LOCK_CLASS, user]);
    const running = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${Q} WHERE user_name = $1 AND status = 'running'`, [user]);
    if ((running.rows[0]?.n ?? 0) >= maxRunning) return undefined;
    const res = await db.query(
      `UPDATE ${Q} SET status = 'running', started_at = now(), heartbeat_at = now(), runner = $2
        WHERE id = (SELECT id FROM ${Q} WHERE user_name = $1 AND status = 'queued' ORDER BY submitted_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      [user, runner],
    );
    return res.rows[0] ? toRecord(res.rows[0]) : undefined;
  });
}

/** Records the result's columns once the statement described them; false when the query is no longer this runner's. */
export async function setColumns(db: Queryable, id: string, runner: number, fields: readonly StoredColumn[]): Promise<boolean> {
  const res = await query(db, `UPDATE ${Q} SET fields = $3 WHERE id = $1 AND runner = $2 AND status = 'running'`, [id, runner, JSON.stringify(fields)]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * Records the upstream backend about to run the statement (its process id and cancel key), so
 * that whoever finds the runner dead can cancel it; false when the query is no longer this runner's.
 */
export async function setBackend(db: Queryable, id: string, runner: number, backend: { processId: number; secretKey: number }): Promise<boolean> {
  const res = await query(db, `UPDATE ${Q} SET backend_pid = $3, backend_key = $4 WHERE id = $1 AND runner = $2 AND status = 'running'`, [id, runner, backend.processId, backend.secretKey]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * The runner's sign of life for the queries it runs; answers the status of each that is still
 * there (one cancelled elsewhere reads `cancelled`, one deleted is missing).
 */
export async function heartbeat(db: Queryable, runner: number, ids: readonly string[]): Promise<Map<string, QueryStatus>> {
  const res = await query<{ id: string; status: QueryStatus }>(
    db,
    `UPDATE ${Q} SET heartbeat_at = now() WHERE id = ANY($1::uuid[]) AND runner = $2 RETURNING id, status`,
    [ids, runner],
  );
  return new Map(res.rows.map((r) => [r.id, r.status]));
}

/** The status of `id` now (undefined once deleted): checked before a cancel heard on the channel is obeyed. */
export async function statusOf(db: Queryable, id: string): Promise<QueryStatus | undefined> {
  const res = await query<{ status: QueryStatus }>(db, `SELECT status FROM ${Q} WHERE id = $1`, [id]);
  return res.rows[0]?.status;
}

/** How a run ended. */
export type RunEnd = { status: 'succeeded'; command: string | null; rowCount: number | null } | { status: 'failed'; error: ErrorJson };

/**
 * Ends `runner`'s run of `id`: its outcome when it was still running (a query cancelled or marked
 * failed meanwhile keeps that status), and no runner any more either way, which tells a cancel
 * waiting elsewhere that the statement is gone. Returns the status the query ends with.
 */
export async function endRun(db: Queryable, id: string, runner: number, end: RunEnd): Promise<QueryStatus | undefined> {
  const ok = end.status === 'succeeded';
  const res = await query<{ status: QueryStatus }>(
    db,
    `UPDATE ${Q} SET runner = NULL, backend_pid = NULL, backend_key = NULL,
            -- only a result that succeeded is kept (the caller deletes the pages of any other)
            rows_stored = CASE WHEN status = 'running' AND $3 = 'succeeded' THEN rows_stored ELSE 0 END,
            status = CASE WHEN status = 'running' THEN $3 ELSE status END,
            finished_at = CASE WHEN status = 'running' THEN now() ELSE finished_at END,
            command = CASE WHEN status = 'running' THEN $4 ELSE command END,
            row_count = CASE WHEN status = 'running' THEN $5::bigint ELSE row_count END,
            error = CASE WHEN status = 'running' THEN $6::jsonb ELSE error END
      WHERE id = $1 AND runner = $2
      RETURNING status`,
    [id, runner, end.status, ok ? end.command : null, ok ? end.rowCount : null, ok ? null : JSON.stringify(end.error)],
  );
  return res.rows[0]?.status;
}

/** The running queries of `runner` (this process), for a stop: each is ended as failed. */
export async function abandonRuns(db: Queryable, runner: number, error: ErrorJson): Promise<void> {
  await query(
    db,
    `UPDATE ${Q} SET runner = NULL, backend_pid = NULL, backend_key = NULL,
            status = CASE WHEN status = 'running' THEN 'failed' ELSE status END,
            finished_at = CASE WHEN status = 'running' THEN now() ELSE finished_at END,
            error = CASE WHEN status = 'running' THEN $2::jsonb ELSE error END
      WHERE runner = $1`,
    [runner, JSON.stringify(error)],
  );
}
