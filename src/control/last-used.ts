/**
 * `api_keys.last_used_at` without a write per request: uses are collected in memory and written
 * in one statement every few seconds (and at close).
 */
import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import { CONTROL_SCHEMA } from './migrations.js';

const FLUSH_MS = 5_000;

export class LastUsedRecorder {
  /** Key id → when it was last used (ms since the epoch: a number, no object per request). */
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly admin: pg.Pool,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  record(keyId: string): void {
    this.pending.set(keyId, Date.now());
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.admin.query(
        `UPDATE ${CONTROL_SCHEMA}.api_keys k SET last_used_at = v.t
           FROM unnest($1::text[], $2::timestamptz[]) AS v(id, t)
          WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.t)`,
        [[...batch.keys()], [...batch.values()].map((ms) => new Date(ms))],
      );
    } catch (err: unknown) {
      this.log.warn({ err }, 'recording key use failed');
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
