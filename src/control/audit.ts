/**
 * The audit log: who did what, when, from where and through which front end — log-ins and failed
 * log-ins, statements the policy denied, DDL that ran, repo and sharing changes, API keys made and
 * revoked. Front ends call `record`, which only appends to a bounded buffer: the statement path
 * never waits for, or fails with, the control plane. A background writer inserts the buffer in
 * batches (one INSERT … SELECT FROM unnest per batch, every second or every 100 rows, and at
 * close). While the control plane is unreachable rows wait in the buffer up to its bound; past it
 * they are dropped and a warning says how many.
 *
 * Never stored: an API key (only its public id), a password, a session cookie. Statement text is
 * cut and redacted by audit-text.ts.
 */
import type pg from 'pg';
import { PgError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { AUDIT_SQL_MAX_CHARS, auditSql } from './audit-text.js';
import { BackgroundWriter } from './background-writer.js';
import { query, type Queryable } from './db.js';
import { parseKey } from './keys.js';
import { CONTROL_SCHEMA } from './migrations.js';

/** Where an action came from. `console` is the web console's session cookie; `cli` the admin commands. */
export type FrontEnd = 'wire' | 'rest' | 'console' | 'cli';

export type AuditAction =
  | 'login'
  | 'login_failed'
  | 'signup'
  | 'statement_denied'
  | 'ddl'
  | 'repo_create'
  | 'repo_delete'
  | 'repo_visibility'
  | 'share_set'
  | 'share_remove'
  | 'key_create'
  | 'key_revoke';

/** The request an action belongs to. */
export interface AuditOrigin {
  frontEnd: FrontEnd;
  /** The client's address (null for the admin CLI). */
  source: string | null;
  /** The REST request id (X-Request-Id), or the wire connection's id. */
  requestId: string | null;
  /** The API key that acted (its public id and name), when one did. */
  keyId?: string | null;
  keyName?: string | null;
}

/** The audit log's fields naming the key a principal came with (none for a console session). */
export function keyOfPrincipal(principal: { keyId: string; key?: { name: string } | undefined }): Pick<AuditOrigin, 'keyId' | 'keyName'> {
  return principal.key === undefined ? {} : { keyId: principal.keyId, keyName: principal.key.name };
}

export interface AuditEvent extends AuditOrigin {
  action: AuditAction;
  /** Who acted; for `login` and `login_failed` the name tried (stored only if such a user exists). */
  user: string | null;
  /** What the action was on: a repo `alice/sales`, a key id, a DDL command tag. */
  target?: string | null;
  /** More about it: a share's `bob:write`, a visibility `public`/`private`. */
  detail?: string | null;
  /** Statements: the SQL text (cut and redacted here) and, for a denial, its SQLSTATE. */
  sql?: string | null;
  sqlstate?: string | null;
}

/** A stored audit row, as `repobase audit` shows it. */
export interface AuditEntry {
  id: string;
  at: Date;
  user: string | null;
  loginName: string | null;
  source: string | null;
  frontEnd: FrontEnd;
  requestId: string | null;
  action: AuditAction;
  target: string | null;
  detail: string | null;
  sql: string | null;
  sqlstate: string | null;
  keyId: string | null;
  keyName: string | null;
}

interface Row {
  at: Date;
  event: AuditEvent;
  sql: string | null;
}

const FLUSH_MS = 1_000;
const BATCH_ROWS = 100;
/** Rows kept in memory while the control plane does not answer (each with at most 4,096 characters of SQL). */
export const AUDIT_BUFFER_ROWS = 10_000;
const RETENTION_SWEEP_MS = 60 * 60 * 1000;

/**
 * DDL by its command tag, as Postgres' `log_statement = 'ddl'` counts it: CREATE, ALTER, DROP,
 * COMMENT, GRANT, REVOKE, SECURITY LABEL. (CREATE TABLE AS and SELECT INTO report `SELECT n`.)
 */
export function isDdlTag(tag: string): boolean {
  return /^(CREATE|ALTER|DROP|COMMENT|GRANT|REVOKE|SECURITY LABEL)\b/.test(tag);
}

/** The public id of an API key (`rb_<id>`) in `text`, if `text` is shaped like one; never the secret. */
export function keyIdOf(text: string): string | null {
  const parts = parseKey(text);
  return parts ? `rb_${parts.id}` : null;
}

export class AuditLog {
  private buffer: Row[] = [];
  private dropped = 0;
  /** The last write failed: the next failure is not logged again. */
  private failing = false;
  private readonly writer: BackgroundWriter;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly admin: pg.Pool,
    private readonly log: Logger,
  ) {
    this.writer = new BackgroundWriter(FLUSH_MS, () => this.write());
  }

  /** Queues one row; returns at once. */
  record(event: AuditEvent): void {
    if (this.buffer.length >= AUDIT_BUFFER_ROWS) {
      this.dropped++;
      return;
    }
    this.buffer.push({ at: new Date(), event, sql: event.sql == null ? null : auditSql(event.sql) });
    if (this.buffer.length % BATCH_ROWS === 0) this.writer.kick();
  }

  /** Resolves once every row recorded so far is written (or given up on). */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** Writes the rows buffered when it starts; rows that come meanwhile wait for the next tick (batches, not a trickle). */
  private async write(): Promise<void> {
    for (let left = this.buffer.length; left > 0; ) {
      const batch = this.buffer.splice(0, Math.min(left, 1000));
      left -= batch.length;
      try {
        await insertRows(this.admin, batch);
      } catch (err: unknown) {
        if (err instanceof PgError && /^2[23]/.test(err.code)) {
          // Rows Postgres refuses now it will refuse again: given up on, not retried forever.
          this.log.warn({ err, dropped: batch.length }, 'audit rows refused by the control plane were dropped');
          continue;
        }
        // Kept for the next write, as far as the bound allows; the newest are dropped past it.
        const room = Math.max(0, AUDIT_BUFFER_ROWS - this.buffer.length);
        this.buffer.unshift(...batch.slice(0, room));
        this.dropped += batch.length - Math.min(room, batch.length);
        if (this.buffer.length > AUDIT_BUFFER_ROWS) this.dropped += this.buffer.splice(AUDIT_BUFFER_ROWS).length;
        // Said once per outage, not at every retry (one a second).
        if (!this.failing) this.log.warn({ err, pending: this.buffer.length }, `writing audit rows failed; they are kept in memory (up to ${AUDIT_BUFFER_ROWS}) and written when the control plane answers`);
        this.failing = true;
        return;
      }
      if (this.failing || this.dropped > 0) {
        this.log.warn({ dropped: this.dropped }, this.dropped > 0 ? 'audit rows are written again; some were dropped meanwhile (the buffer was full)' : 'audit rows are written again');
        this.failing = false;
        this.dropped = 0;
      }
    }
  }


  /**
   * Deletes rows older than `days` now and every hour after (serving instances only: each does
   * it, and a DELETE of rows already deleted costs nothing). 0 keeps rows forever.
   */
  startRetention(days: number): void {
    if (days <= 0) return;
    const sweep = () => void this.sweep(days).catch((err: unknown) => this.log.warn({ err }, 'deleting old audit rows failed'));
    sweep();
    this.sweeper = setInterval(sweep, RETENTION_SWEEP_MS);
    this.sweeper.unref();
  }

  /** Deletes rows older than `days`; returns how many. */
  async sweep(days: number): Promise<number> {
    const res = await query(this.admin, `DELETE FROM ${CONTROL_SCHEMA}.audit_log WHERE at < now() - make_interval(days => $1)`, [days]);
    if (res.rowCount) this.log.info({ deleted: res.rowCount, days }, 'old audit rows deleted');
    return res.rowCount ?? 0;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.writer.close();
    const lost = this.buffer.length + this.dropped;
    if (lost > 0) this.log.warn({ lost }, 'audit rows lost at stop: the control plane did not answer');
  }
}

/** One INSERT for a batch. A log-in names a user only if one by that name exists (else login_name alone keeps it). */
async function insertRows(db: Queryable, rows: readonly Row[]): Promise<void> {
  const col = (f: (r: Row) => string | null | undefined) => rows.map((r) => clean(f(r)));
  await query(
    db,
    `INSERT INTO ${CONTROL_SCHEMA}.audit_log (at, user_name, login_name, source, front_end, request_id, action, target, detail, sql_text, sqlstate, key_id, key_name)
     SELECT v.at,
            CASE WHEN v.action LIKE 'login%' THEN (SELECT u.name FROM ${CONTROL_SCHEMA}.users u WHERE u.name = v.user_name) ELSE v.user_name END,
            CASE WHEN v.action LIKE 'login%' THEN v.user_name END,
            v.source, v.front_end, v.request_id, v.action, v.target, v.detail, v.sql_text, v.sqlstate, v.key_id, v.key_name
       FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
            AS v(at, user_name, source, front_end, request_id, action, target, detail, sql_text, sqlstate, key_id, key_name)`,
    [
      rows.map((r) => r.at),
      col((r) => r.event.user),
      col((r) => r.event.source),
      col((r) => r.event.frontEnd),
      col((r) => r.event.requestId),
      col((r) => r.event.action),
      col((r) => r.event.target ?? null),
      col((r) => r.event.detail ?? null),
      col((r) => r.sql),
      col((r) => r.event.sqlstate ?? null),
      col((r) => r.event.keyId ?? null),
      col((r) => r.event.keyName ?? null),
    ],
  );
}

/** Text as a column can hold it: no NUL (Postgres text refuses it), and names and targets bounded. */
function clean(text: string | null | undefined): string | null {
  if (text == null) return null;
  const bounded = text.length > AUDIT_SQL_MAX_CHARS ? text.slice(0, AUDIT_SQL_MAX_CHARS) : text;
  return bounded.includes('\0') ? bounded.replaceAll('\0', '\uFFFD') : bounded;
}

export interface AuditFilter {
  user?: string | undefined;
  since?: Date | undefined;
  limit: number;
}

/** The newest rows first; a user filter matches the user and the name a log-in tried. */
export async function listAudit(db: Queryable, filter: AuditFilter): Promise<AuditEntry[]> {
  const res = await query<{
    id: string;
    at: Date;
    user_name: string | null;
    login_name: string | null;
    source: string | null;
    front_end: FrontEnd;
    request_id: string | null;
    action: AuditAction;
    target: string | null;
    detail: string | null;
    sql_text: string | null;
    sqlstate: string | null;
    key_id: string | null;
    key_name: string | null;
  }>(
    db,
    `SELECT id::text, at, user_name, login_name, source, front_end, request_id, action, target, detail, sql_text, sqlstate, key_id, key_name
       FROM ${CONTROL_SCHEMA}.audit_log
      WHERE ($1::text IS NULL OR user_name = $1 OR login_name = $1) AND ($2::timestamptz IS NULL OR at >= $2)
      ORDER BY at DESC, id DESC
      LIMIT $3`,
    [filter.user ?? null, filter.since ?? null, filter.limit],
  );
  return res.rows.map((r) => ({
    id: r.id,
    at: r.at,
    user: r.user_name,
    loginName: r.login_name,
    source: r.source,
    frontEnd: r.front_end,
    requestId: r.request_id,
    action: r.action,
    target: r.target,
    detail: r.detail,
    sql: r.sql_text,
    sqlstate: r.sqlstate,
    keyId: r.key_id,
    keyName: r.key_name,
  }));
}
