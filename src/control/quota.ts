/**
 * The storage quota: which users keep more in their repos than their limit allows, read in the
 * background every `storageRefreshMs` (and at once for a user whose limits change) — never per
 * statement. The users over it are one map shared by every rights snapshot (policy/types.ts
 * `Rights.full`): the policy refuses statements that would add to their data with 53100, while
 * reading, DELETE, TRUNCATE and DROP go on. The figures in the map are refreshed in place; when a
 * user crosses the line either way, `onCrossed` runs (the control plane then makes new rights
 * snapshots, whose cached decisions were made without it).
 *
 * What counts is the bytes of the tables, indexes, materialized views and TOAST of the user's
 * repos, as `GET /usage/` shows them (storage.ts). Large objects are not counted: they grow
 * through functions, out of the policy's sight.
 */
import type { Logger } from '../shared/logger.js';
import type { StorageUse } from '../policy/index.js';
import { query, type Queryable } from './db.js';
import type { LimitsBook } from './limits.js';
import { CONTROL_SCHEMA } from './migrations.js';

/** Bytes in the repos of each of `owners` (every owner when undefined). */
export async function repoBytesByOwner(db: Queryable, owners: readonly string[] | undefined): Promise<Map<string, number>> {
  const res = await query<{ owner: string; bytes: string }>(
    db,
    `SELECT r.owner, coalesce(sum(pg_catalog.pg_total_relation_size(c.oid)), 0) AS bytes
       FROM ${CONTROL_SCHEMA}.repos r
       JOIN pg_catalog.pg_namespace n ON n.nspname = r.owner || '/' || r.name
       JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relkind IN ('r', 'm')
      WHERE $1::text[] IS NULL OR r.owner = ANY($1)
      GROUP BY r.owner`,
    [owners ?? null],
  );
  return new Map(res.rows.map((r) => [r.owner, Number(r.bytes)]));
}

export class StorageQuota {
  /** Users at or over their quota: what they keep, and what they may. */
  readonly over = new Map<string, StorageUse>();
  private readonly timer: NodeJS.Timeout;
  private failing = false;

  constructor(
    private readonly db: Queryable,
    private readonly limits: LimitsBook,
    refreshMs: number,
    private readonly log: Logger,
    private readonly onCrossed: () => void,
  ) {
    this.timer = setInterval(() => void this.refresh(), refreshMs);
    this.timer.unref();
  }

  /** Reads what the users with a quota keep now (only `users`, when given) and updates `over`. */
  async refresh(users?: readonly string[]): Promise<void> {
    const everyone = this.limits.defaults.storageBytes > 0;
    const quotaed = everyone ? undefined : [...this.limits.overriding('storageBytes')].filter(([, v]) => v > 0).map(([u]) => u);
    const asked = users ?? quotaed;
    if (asked !== undefined && asked.length === 0) {
      if (users === undefined) this.set(new Map());
      else this.set(new Map(), users);
      return;
    }
    let used: Map<string, number>;
    try {
      used = await repoBytesByOwner(this.db, asked);
      if (this.failing) this.log.info('storage figures are read again');
      this.failing = false;
    } catch (err: unknown) {
      if (!this.failing) this.log.warn({ err }, 'reading what users store failed; the storage quota holds as last read');
      this.failing = true;
      return;
    }
    this.set(used, users);
  }

  /** Takes new figures for `users` (every user when undefined: those not in `used` keep nothing). */
  private set(used: ReadonlyMap<string, number>, users?: readonly string[]): void {
    let crossed = false;
    const consider = users ?? new Set([...used.keys(), ...this.over.keys()]);
    for (const user of consider) {
      const allowed = this.limits.of(user).storageBytes;
      const bytes = used.get(user) ?? 0;
      const was = this.over.get(user);
      if (allowed > 0 && bytes >= allowed) {
        if (was === undefined) crossed = true;
        this.over.set(user, { used: bytes, allowed });
      } else if (was !== undefined) {
        crossed = true;
        this.over.delete(user);
      }
    }
    if (crossed) this.onCrossed();
  }

  close(): void {
    clearInterval(this.timer);
  }
}
