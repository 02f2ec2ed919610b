/**
 * Import jobs: one row per upload in the control plane, so any instance can answer
 * `GET /import/<id>`. The instance running an import writes its progress at most once a second
 * (a heartbeat); a running job whose heartbeat stopped for STALE_SECONDS was interrupted (its
 * instance stopped) and reads as FAILED.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { query } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';

export type ImportStatus = 'RECEIVED' | 'PROCESSING' | 'DONE' | 'FAILED';

/** A heartbeat older than this marks a running job as interrupted. */
export const STALE_SECONDS = 60;

export interface ImportJob {
  id: string;
  user: string;
  repo: string;
  table: string;
  mode: string;
  status: ImportStatus;
  bytes: number;
  rows: number;
  result: unknown;
  error: Record<string, unknown> | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

interface JobRow {
  id: string;
  user_name: string;
  repo: string;
  table_name: string;
  mode: string;
  status: ImportStatus;
  bytes: string;
  rows: string;
  result: unknown;
  error: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  stale: boolean;
}

const INTERRUPTED = { code: '57P01', message: 'the import was interrupted: the server running it stopped', detail: null, hint: 'upload the file again', line: null };

function toJob(r: JobRow): ImportJob {
  const stale = r.stale && (r.status === 'RECEIVED' || r.status === 'PROCESSING');
  return {
    id: r.id,
    user: r.user_name,
    repo: r.repo,
    table: r.table_name,
    mode: r.mode,
    status: stale ? 'FAILED' : r.status,
    bytes: Number(r.bytes),
    rows: Number(r.rows),
    result: r.result,
    error: stale ? INTERRUPTED : r.error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
  };
}

const COLUMNS = `id, user_name, repo, table_name, mode, status, bytes, rows, result, error, created_at, updated_at, finished_at,
  updated_at < now() - make_interval(secs => ${STALE_SECONDS}) AS stale`;

/** Records a new import (RECEIVED). */
export async function createImportJob(admin: pg.Pool, job: { user: string; repo: string; table: string; mode: string }): Promise<ImportJob> {
  const res = await query<JobRow>(
    admin,
    `INSERT INTO ${CONTROL_SCHEMA}.imports (id, user_name, repo, table_name, mode, status) VALUES ($1, $2, $3, $4, $5, 'RECEIVED') RETURNING ${COLUMNS}`,
    [randomUUID(), job.user, job.repo, job.table, job.mode],
  );
  return toJob(res.rows[0]!);
}

/** Progress of a running import (also its heartbeat). */
export async function updateImportJob(admin: pg.Pool, id: string, change: { status?: ImportStatus; bytes: number; rows: number }): Promise<void> {
  await query(
    admin,
    `UPDATE ${CONTROL_SCHEMA}.imports SET status = coalesce($2, status), bytes = $3, rows = $4, updated_at = now()
      WHERE id = $1 AND status IN ('RECEIVED', 'PROCESSING')`,
    [id, change.status ?? null, change.bytes, change.rows],
  );
}

/** The end of an import: DONE with its result, or FAILED with its error. */
export async function finishImportJob(
  admin: pg.Pool,
  id: string,
  end: { status: 'DONE' | 'FAILED'; bytes: number; rows: number; result?: unknown; error?: Record<string, unknown> },
): Promise<ImportJob | undefined> {
  const res = await query<JobRow>(
    admin,
    `UPDATE ${CONTROL_SCHEMA}.imports SET status = $2, bytes = $3, rows = $4, result = $5, error = $6, updated_at = now(), finished_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, end.status, end.bytes, end.rows, end.result === undefined ? null : JSON.stringify(end.result), end.error ? JSON.stringify(end.error) : null],
  );
  return res.rows[0] ? toJob(res.rows[0]) : undefined;
}

/** A job of `user` (others' jobs are not found). */
export async function getImportJob(admin: pg.Pool, id: string, user: string): Promise<ImportJob | undefined> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return undefined;
  const res = await query<JobRow>(admin, `SELECT ${COLUMNS} FROM ${CONTROL_SCHEMA}.imports WHERE id = $1 AND user_name = $2`, [id, user]);
  return res.rows[0] ? toJob(res.rows[0]) : undefined;
}
