/**
 * The sizes a process starts with when the configuration leaves them to it: its budget of
 * backends (`upstreamMaxSessions` 0: what the cluster's `max_connections` allows, at most 200)
 * and its admission slots (`upstreamActiveMax` 0: 4 × this machine's cores), each its share
 * among the worker processes.
 */
import { availableParallelism } from 'node:os';
import type pg from 'pg';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';

/** At most this many backends, unless configured: beyond it a 2-core machine gained nothing (docs/operations.md). */
export const AUTO_BUDGET_MAX = 200;
/** Connections each serving process keeps for the control plane (its admin pool, LISTEN, the cancel channel). */
const CONTROL_PER_PROCESS = 10;
/** Left for an admin's psql and the like. */
const ADMIN_SPARE = 5;

/** Transactions running at once per core, unless configured: room for the round trips a backend spends waiting. */
export const ACTIVE_PER_CORE = 4;

/** The whole service's budget of backends the cluster allows: its max_connections less what is reserved, the control plane's and a spare. */
export async function clusterBudget(admin: pg.Pool, workers: number): Promise<number> {
  const res = await admin.query<{ max: number; reserved: number }>(
    `SELECT current_setting('max_connections')::int AS max,
            current_setting('superuser_reserved_connections')::int + coalesce(current_setting('reserved_connections', true), '0')::int AS reserved`,
  );
  const row = res.rows[0]!;
  return Math.max(workers, Math.min(AUTO_BUDGET_MAX, row.max - row.reserved - CONTROL_PER_PROCESS * workers - ADMIN_SPARE));
}

/** The budget when the cluster cannot be asked (it is down while the service starts). */
const UNKNOWN_CLUSTER_BUDGET = 100;

/**
 * This process's budget of backends: as configured (already its share), else its share of what
 * the cluster allows — or of 100 when the cluster does not answer yet (the service starts all
 * the same; see ControlPlane.openWhenReachable).
 */
export async function processBudget(config: Pick<Config, 'upstreamMaxSessions'>, admin: pg.Pool, workers: number, log: Logger): Promise<number> {
  if (config.upstreamMaxSessions > 0) return config.upstreamMaxSessions;
  let total = UNKNOWN_CLUSTER_BUDGET;
  try {
    total = await clusterBudget(admin, workers);
  } catch (err: unknown) {
    log.warn({ err: String((err as Error)?.message ?? err), budget: total }, 'cannot ask the upstream how many connections it allows: the service holds at most 100 backends; set upstreamMaxSessions to choose');
  }
  return Math.max(1, Math.ceil(total / workers));
}

/** This process's admission slots: as configured (already its share), else its share of 4 × the cores. */
export function processActiveMax(config: Pick<Config, 'upstreamActiveMax'>, workers: number, cores = availableParallelism()): number {
  if (config.upstreamActiveMax > 0) return config.upstreamActiveMax;
  return Math.max(1, Math.ceil((ACTIVE_PER_CORE * cores) / workers));
}
