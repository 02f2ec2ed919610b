/**
 * What one user may use of the shared cluster: the configuration's defaults, which an admin
 * overrides per user (`repobase user limits`, kept in the control plane). Every limit is for the
 * whole service; each worker process enforces its share of the ones counted per process
 * (`shareOf`). The user, not the Postgres role, is the unit: a role that acts for a user (a
 * scoped key's) counts to that user.
 */
import type { Config } from './config.js';

export interface UserLimits {
  /** Wire connections open at once (53300 past it); 0 = no limit of the user's own. */
  connections: number;
  /** Transactions running upstream at once; 0 = none of the user's own (the fair share still holds). */
  active: number;
  /** Each statement, on both front ends (57014 past it); 0 = none. */
  statementTimeoutMs: number;
  /** A wire client idle inside a transaction this long is ended (25P03); 0 = never. */
  idleInTransactionTimeoutMs: number;
  /** Bytes the user may keep in repos and large objects (53100 on growth past it); 0 = no quota. */
  storageBytes: number;
  /** Upstream time per minute before the user is slowed (a lower weight in the fair queue); 0 = off. */
  timeBudgetMs: number;
}

export type LimitName = keyof UserLimits;

/** Every limit, in the order they are shown. */
export const LIMIT_NAMES: readonly LimitName[] = ['connections', 'active', 'statementTimeoutMs', 'idleInTransactionTimeoutMs', 'storageBytes', 'timeBudgetMs'];

/** Nothing limited. */
export const NO_LIMITS: UserLimits = Object.freeze({ connections: 0, active: 0, statementTimeoutMs: 0, idleInTransactionTimeoutMs: 0, storageBytes: 0, timeBudgetMs: 0 });

/** An admin's overrides of one user's limits: a value replaces the default, null goes back to it. */
export type LimitOverrides = { [K in LimitName]?: number | null };

/** The configuration's defaults, for the whole service. */
export function defaultLimits(config: Pick<Config, 'userMaxConnections' | 'userActiveMax' | 'statementTimeoutMs' | 'idleInTransactionTimeoutMs' | 'userStorageQuotaBytes' | 'userTimeBudgetMs'>): UserLimits {
  return {
    connections: config.userMaxConnections,
    active: config.userActiveMax,
    statementTimeoutMs: config.statementTimeoutMs,
    idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs,
    storageBytes: config.userStorageQuotaBytes,
    timeBudgetMs: config.userTimeBudgetMs,
  };
}

/** The defaults with a user's overrides applied. */
export function withOverrides(defaults: UserLimits, overrides: LimitOverrides | undefined): UserLimits {
  if (overrides === undefined) return defaults;
  const out = { ...defaults };
  for (const name of LIMIT_NAMES) {
    const v = overrides[name];
    if (v !== undefined && v !== null) out[name] = v;
  }
  return out;
}

/**
 * One worker process's share of a user's limits: what is counted per process (connections,
 * transactions at once, upstream time) divided evenly, rounded up, as the other service-wide
 * limits are (workers/messages.ts); timeouts and the storage quota hold as they are.
 */
export function shareOf(limits: UserLimits, workers: number): UserLimits {
  if (workers <= 1) return limits;
  const share = (n: number) => (n === 0 ? 0 : Math.max(1, Math.ceil(n / workers)));
  return { ...limits, connections: share(limits.connections), active: share(limits.active), timeBudgetMs: share(limits.timeBudgetMs) };
}

/**
 * The settings every upstream session of the user logs in with: Postgres' own statement and
 * idle-in-transaction timeouts, so that it ends what runs too long with its own words. (A wire
 * client may SET them otherwise; the wire front end holds it to its limits all the same.)
 */
export function loginSettings(limits: UserLimits): Record<string, string> {
  return { statement_timeout: String(limits.statementTimeoutMs), idle_in_transaction_session_timeout: String(limits.idleInTransactionTimeoutMs) };
}
