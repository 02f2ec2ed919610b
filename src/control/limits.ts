/**
 * Per-user limits: an admin's overrides of the configuration's defaults, one row per user who has
 * any (`_repobase.user_limits`, migration 15; a null column is the default). Every serving
 * process keeps all the rows in memory (few users have overrides) and reads them again when a
 * change is announced (`NOTIFY repobase_control 'limits:<user>'`), so a limit set on any
 * instance, or by the admin CLI, holds on every worker and instance within a moment; the hot
 * paths read a user's limits from memory, never from the database.
 */
import { PgError, SqlState } from '../shared/errors.js';
import { LIMIT_NAMES, withOverrides, type LimitName, type LimitOverrides, type UserLimits } from '../shared/limits.js';
import { query, type Queryable } from './db.js';
import { notify } from './events.js';
import { CONTROL_SCHEMA } from './migrations.js';

/** Each limit's column. */
const COLUMNS: Readonly<Record<LimitName, string>> = {
  connections: 'connections',
  active: 'active',
  statementTimeoutMs: 'statement_timeout_ms',
  idleInTransactionTimeoutMs: 'idle_in_transaction_timeout_ms',
  storageBytes: 'storage_bytes',
  timeBudgetMs: 'time_budget_ms',
};

/** The largest value of the integer columns (the storage quota is a bigint). */
const INT_MAX = 2 ** 31 - 1;

/** Every user's overrides, by user. */
export async function loadOverrides(db: Queryable): Promise<Map<string, LimitOverrides>> {
  const res = await query<Record<string, string | null>>(db, `SELECT user_name, ${LIMIT_NAMES.map((n) => COLUMNS[n]).join(', ')} FROM ${CONTROL_SCHEMA}.user_limits`);
  const out = new Map<string, LimitOverrides>();
  for (const row of res.rows) {
    const overrides: LimitOverrides = {};
    for (const name of LIMIT_NAMES) {
      const v = row[COLUMNS[name]];
      if (v !== null && v !== undefined) overrides[name] = Number(v);
    }
    out.set(row.user_name!, overrides);
  }
  return out;
}

/**
 * Sets some of `user`'s overrides (a number sets it, null goes back to the default; limits not
 * named are left as they are) inside the caller's transaction, and announces the change.
 */
export async function setOverrides(db: Queryable, user: string, change: LimitOverrides): Promise<void> {
  const found = await query(db, `SELECT 1 FROM ${CONTROL_SCHEMA}.users WHERE name = $1`, [user]);
  if (!found.rowCount) throw new PgError(SqlState.UndefinedObject, `user "${user}" does not exist`);
  const names = LIMIT_NAMES.filter((n) => change[n] !== undefined);
  for (const name of names) {
    const v = change[name];
    if (v === null) continue;
    if (v === undefined || !Number.isInteger(v) || v < 0 || (name !== 'storageBytes' && v > INT_MAX) || v > Number.MAX_SAFE_INTEGER) {
      throw new PgError(SqlState.InvalidParameterValue, `invalid limit ${name}: ${String(v)}`, { hint: 'a whole number, 0 or more (0: no limit)' });
    }
  }
  if (names.length > 0) {
    const cols = names.map((n) => COLUMNS[n]);
    await query(
      db,
      `INSERT INTO ${CONTROL_SCHEMA}.user_limits AS l (user_name, ${cols.join(', ')}) VALUES ($1, ${cols.map((_, i) => `$${i + 2}`).join(', ')})
       ON CONFLICT (user_name) DO UPDATE SET ${cols.map((c) => `${c} = excluded.${c}`).join(', ')}, updated_at = now()`,
      [user, ...names.map((n) => change[n])],
    );
  }
  // A row of nothing but defaults says nothing: gone.
  await query(db, `DELETE FROM ${CONTROL_SCHEMA}.user_limits WHERE user_name = $1 AND ${LIMIT_NAMES.map((n) => `${COLUMNS[n]} IS NULL`).join(' AND ')}`, [user]);
  await notify(db, { kind: 'limits', user });
}

/**
 * The limits of every user as this process knows them: the defaults with the overrides read
 * last. `of` is synchronous (a map look-up); `version` changes whenever any user's limits do,
 * so that what was derived from them can be checked for staleness with one comparison.
 */
export class LimitsBook {
  private overrides = new Map<string, LimitOverrides>();
  private readonly resolved = new Map<string, UserLimits>();
  private readonly handlers = new Set<(users: readonly string[]) => void>();
  private current = 0;

  constructor(readonly defaults: UserLimits) {}

  /** Bumped at every change of any user's limits. */
  get version(): number {
    return this.current;
  }

  /** `user`'s limits for the whole service. */
  of(user: string): UserLimits {
    return this.resolved.get(user) ?? this.defaults;
  }

  /** `user`'s overrides (what differs from the defaults), if any. */
  overridesOf(user: string): LimitOverrides | undefined {
    return this.overrides.get(user);
  }

  /** Users with an override of `name`, and its value. */
  *overriding(name: LimitName): Iterable<[string, number]> {
    for (const [user, o] of this.overrides) {
      const v = o[name];
      if (v !== undefined && v !== null) yield [user, v];
    }
  }

  /** Calls `handler` with the users whose limits changed, after every change; returns the unsubscription. */
  onChange(handler: (users: readonly string[]) => void): () => void {
    this.handlers.add(handler);
    return () => void this.handlers.delete(handler);
  }

  /** Takes every user's overrides as read from the control plane; tells the handlers whose changed. */
  replace(next: Map<string, LimitOverrides>): void {
    const changed: string[] = [];
    for (const user of new Set([...this.overrides.keys(), ...next.keys()])) {
      if (JSON.stringify(this.overrides.get(user) ?? {}) !== JSON.stringify(next.get(user) ?? {})) changed.push(user);
    }
    this.overrides = next;
    this.resolved.clear();
    for (const [user, o] of next) this.resolved.set(user, withOverrides(this.defaults, o));
    if (changed.length === 0) return;
    this.current++;
    for (const handler of this.handlers) handler(changed);
  }
}
