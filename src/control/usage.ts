/**
 * Per-user usage per hour: statements, rows returned, bytes in and out, upload bytes, and the
 * time their transactions waited in the fair queue (upstream/admission.ts). Counted in
 * memory and added to `usage_hourly` every few seconds and at close with an upsert that adds
 * (`x = x + excluded.x`), so the counts of every instance and worker process add up.
 *
 * Two ways in: `add` for a whole REST request, and a `UsageMeter` per wire connection, whose
 * plain counters the relay bumps per frame without a lookup; meters are read at each write. A
 * count lands in the hour it is written in (at most a write interval late).
 */
import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import { BackgroundWriter } from './background-writer.js';
import { query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';

export interface UsageCounts {
  statements: number;
  rowsReturned: number;
  bytesIn: number;
  bytesOut: number;
  uploadBytes: number;
  /** Milliseconds the user's transactions waited for their turn. */
  queuedMs: number;
}

const FIELDS = ['statements', 'rowsReturned', 'bytesIn', 'bytesOut', 'uploadBytes', 'queuedMs'] as const;
const FLUSH_MS = 5_000;
/** (user, hour) pairs kept while the control plane does not answer; past it counts are dropped. */
const MAX_PENDING = 100_000;
const HOUR_MS = 60 * 60 * 1000;

function zero(): UsageCounts {
  return { statements: 0, rowsReturned: 0, bytesIn: 0, bytesOut: 0, uploadBytes: 0, queuedMs: 0 };
}

/** One wire connection's counts since the last write; the relay adds to the fields directly. */
export class UsageMeter implements UsageCounts {
  statements = 0;
  rowsReturned = 0;
  bytesIn = 0;
  bytesOut = 0;
  uploadBytes = 0;
  queuedMs = 0;

  constructor(
    readonly user: string,
    private readonly recorder: UsageRecorder,
  ) {}

  /** Hands the last counts over; the meter is not read again. */
  close(): void {
    this.recorder.release(this);
  }
}

export class UsageRecorder {
  private readonly meters = new Set<UsageMeter>();
  /** `user \0 hour start (ms)` → counts not yet written. */
  private pending = new Map<string, UsageCounts>();
  /**
   * Each user's slot in `pending` for the hour it was last counted in: `add` runs on every REST
   * request, and finds it without building the key. Emptied whenever `pending` is replaced.
   */
  private readonly latest = new Map<string, { hour: number; counts: UsageCounts }>();
  private dropped = 0;
  /** The last write failed: the next failure is not logged again. */
  private failing = false;
  private readonly writer: BackgroundWriter;

  constructor(
    private readonly admin: pg.Pool,
    private readonly log: Logger,
  ) {
    this.writer = new BackgroundWriter(FLUSH_MS, () => this.write());
  }

  /** Adds `counts` to `user`'s current hour. */
  add(user: string, counts: Partial<UsageCounts>): void {
    const hour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
    const latest = this.latest.get(user);
    let into = latest?.hour === hour ? latest.counts : undefined;
    if (!into) {
      into = this.slot(user, hour);
      if (!into) return;
      this.latest.set(user, { hour, counts: into });
    }
    // Field by field rather than a loop over FIELDS: a keyed access by a variable name is the slow kind.
    into.statements += counts.statements ?? 0;
    into.rowsReturned += counts.rowsReturned ?? 0;
    into.bytesIn += counts.bytesIn ?? 0;
    into.bytesOut += counts.bytesOut ?? 0;
    into.uploadBytes += counts.uploadBytes ?? 0;
    into.queuedMs += counts.queuedMs ?? 0;
  }

  /** A meter for one connection of `user`; `close` it when the connection ends. */
  meter(user: string): UsageMeter {
    const m = new UsageMeter(user, this);
    this.meters.add(m);
    return m;
  }

  /** @internal the meter's close */
  release(m: UsageMeter): void {
    if (this.meters.delete(m)) this.take(m);
  }

  /** Resolves once every count so far is written (or given up on). */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  async close(): Promise<void> {
    await this.writer.close();
  }

  private slot(user: string, hour: number): UsageCounts | undefined {
    const key = `${user}\0${hour}`;
    let counts = this.pending.get(key);
    if (!counts) {
      if (this.pending.size >= MAX_PENDING) {
        this.dropped++;
        return undefined;
      }
      this.pending.set(key, (counts = zero()));
    }
    return counts;
  }

  /** Moves a meter's counts into `pending` and zeroes it. */
  private take(m: UsageMeter): void {
    if (FIELDS.every((f) => m[f] === 0)) return;
    this.add(m.user, m);
    for (const f of FIELDS) m[f] = 0;
  }

  private async write(): Promise<void> {
    for (const m of this.meters) this.take(m);
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.latest.clear();
    const keys = [...batch.keys()];
    const rows = [...batch.values()];
    try {
      await query(
        this.admin,
        `INSERT INTO ${CONTROL_SCHEMA}.usage_hourly AS u (user_name, hour, statements, rows_returned, bytes_in, bytes_out, upload_bytes, queued_ms)
         SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
         ON CONFLICT (user_name, hour) DO UPDATE SET
           statements = u.statements + excluded.statements,
           rows_returned = u.rows_returned + excluded.rows_returned,
           bytes_in = u.bytes_in + excluded.bytes_in,
           bytes_out = u.bytes_out + excluded.bytes_out,
           upload_bytes = u.upload_bytes + excluded.upload_bytes,
           queued_ms = u.queued_ms + excluded.queued_ms`,
        [
          keys.map((k) => k.slice(0, k.indexOf('\0'))),
          keys.map((k) => new Date(Number(k.slice(k.indexOf('\0') + 1)))),
          ...FIELDS.map((f) => rows.map((r) => Math.round(r[f]))),
        ],
      );
    } catch (err: unknown) {
      // Added back for the next write (the same hours), as far as the bound allows.
      for (const [key, counts] of batch) {
        const [user, hour] = [key.slice(0, key.indexOf('\0')), Number(key.slice(key.indexOf('\0') + 1))];
        const into = this.slot(user, hour);
        if (into) for (const f of FIELDS) into[f] += counts[f];
      }
      // Said once per outage, not at every retry.
      if (!this.failing) this.log.warn({ err, pending: this.pending.size }, 'writing usage counts failed; they are kept in memory and written when the control plane answers');
      this.failing = true;
      return;
    }
    if (this.failing || this.dropped > 0) {
      this.log.warn({ dropped: this.dropped }, this.dropped > 0 ? 'usage counts are written again; those of some (user, hour) pairs were dropped meanwhile' : 'usage counts are written again');
      this.failing = false;
      this.dropped = 0;
    }
  }
}

/** One stored row: a user's usage in one hour. */
export interface UsageRow extends UsageCounts {
  user: string;
  hour: Date;
}

/** Usage rows, oldest hour first: of `user` (all users when undefined), from the hour holding `since`. */
export async function listUsage(db: Queryable, filter: { user?: string | undefined; since?: Date | undefined }): Promise<UsageRow[]> {
  const res = await query<{ user_name: string; hour: Date; statements: string; rows_returned: string; bytes_in: string; bytes_out: string; upload_bytes: string; queued_ms: string }>(
    db,
    `SELECT user_name, hour, statements, rows_returned, bytes_in, bytes_out, upload_bytes, queued_ms
       FROM ${CONTROL_SCHEMA}.usage_hourly
      WHERE ($1::text IS NULL OR user_name = $1) AND ($2::timestamptz IS NULL OR hour >= date_trunc('hour', $2::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
      ORDER BY hour, user_name`,
    [filter.user ?? null, filter.since ?? null],
  );
  return res.rows.map((r) => ({
    user: r.user_name,
    hour: r.hour,
    statements: Number(r.statements),
    rowsReturned: Number(r.rows_returned),
    bytesIn: Number(r.bytes_in),
    bytesOut: Number(r.bytes_out),
    uploadBytes: Number(r.upload_bytes),
    queuedMs: Number(r.queued_ms),
  }));
}
