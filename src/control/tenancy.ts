/**
 * What the control plane keeps of how users share the cluster: every user's limits (limits.ts),
 * kept current as admins change them on any instance, and — on a serving process — who is over
 * their storage quota (quota.ts).
 */
import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { LimitOverrides, UserLimits } from '../shared/limits.js';
import type { StorageUse } from '../policy/index.js';
import { inTransaction } from './db.js';
import { LimitsBook, loadOverrides, setOverrides } from './limits.js';
import { StorageQuota } from './quota.js';

export class Tenancy {
  readonly limits: LimitsBook;
  private quota: StorageQuota | undefined;

  constructor(
    private readonly admin: pg.Pool,
    defaults: UserLimits,
    private readonly log: Logger,
  ) {
    this.limits = new LimitsBook(defaults);
  }

  /**
   * Reads every user's overrides; on a serving process (`serving`) also starts reading what users
   * store every `refreshMs`, calling `onCrossed` whenever a user crosses their quota either way.
   */
  async start(serving: boolean, refreshMs: number, onCrossed: () => void): Promise<void> {
    this.limits.replace(await loadOverrides(this.admin));
    if (!serving || this.quota !== undefined) return;
    this.quota = new StorageQuota(this.admin, this.limits, refreshMs, this.log, onCrossed);
    this.limits.onChange((users) => void this.quota?.refresh(users));
    await this.quota.refresh();
  }

  /** Users over their storage quota (serving processes; undefined elsewhere). */
  get full(): ReadonlyMap<string, StorageUse> | undefined {
    return this.quota?.over;
  }

  /** Sets some of `user`'s limits on `db` (see setOverrides), and takes them here at once. */
  async set(db: pg.Pool, user: string, change: LimitOverrides): Promise<void> {
    await inTransaction(db, (client) => setOverrides(client, user, change));
    await this.reload();
  }

  /** Reads every user's overrides again (a change announced, or the listener reconnected). */
  async reload(): Promise<void> {
    try {
      this.limits.replace(await loadOverrides(this.admin));
    } catch (err: unknown) {
      this.log.warn({ err }, 'reading user limits failed; the ones read last hold');
    }
  }

  /** `user`'s transactions open upstream now (running, or idle inside one), every instance's. */
  async openTransactions(user: string): Promise<number> {
    const res = await this.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_catalog.pg_stat_activity WHERE usename = $1 AND backend_type = 'client backend' AND state <> 'idle'", [user]);
    return res.rows[0]?.n ?? 0;
  }

  close(): void {
    this.quota?.close();
  }
}
