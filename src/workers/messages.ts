/**
 * What the primary and its workers say to each other over the IPC channel, and how a worker's
 * share of the service-wide limits is computed.
 */
import { availableParallelism } from 'node:os';
import type { Config } from '../shared/config.js';
import type { PgError } from '../shared/errors.js';

/** A PgError's fields, as they cross the channel. */
export type PlainError = ReturnType<PgError['toJSON']>;

/**
 * A REST query cancel (`POST /query/<id>/cancel`) asked of the other processes, and its answer:
 * whether one of them ran that query. `ref` pairs them, numbered by whoever asks.
 */
export type QueryCancelAsk = { kind: 'query-cancel'; ref: number; user: string; id: string };
export type QueryCancelAnswer = { kind: 'query-cancel-result'; ref: number; found: boolean };

/** A scrape of `/metrics` on a worker: it asks the primary for the sum over all workers (`ref` pairs ask and answer). */
export type MetricsAsk = { kind: 'metrics'; ref: number };
export type MetricsAnswer = { kind: 'metrics-result'; ref: number; text?: string; error?: string };

/** A user's wire connections on every worker (connection-counts.ts). */
export type ConnectionsAsk = { kind: 'connections'; ref: number; user: string };
export type ConnectionsAnswer = { kind: 'connections-result'; ref: number; count: number };

export type WorkerMessage =
  | { kind: 'ready'; httpUrl: string; pgPort: number }
  | ConnectionsAsk
  | ConnectionsAnswer
  | MetricsAsk
  | { kind: 'failed'; error: PlainError }
  | QueryCancelAsk
  | QueryCancelAnswer;

/** `stop`: drain (config `drainTimeoutMs`), then stop; a worker whose primary is gone stops at once. */
export type PrimaryMessage = { kind: 'stop' } | QueryCancelAsk | QueryCancelAnswer | MetricsAnswer | ConnectionsAsk | ConnectionsAnswer;

export function isMessage<T extends { kind: string }>(m: unknown): m is T {
  return typeof m === 'object' && m !== null && typeof (m as { kind?: unknown }).kind === 'string';
}

/**
 * The processes of `workers: 0` on a machine of `cores` cores: one per core but one, and at least
 * one. A process competes for the cores with Postgres and the kernel's network work (a proxy's
 * requests cost more kernel than JavaScript): on 2 cores shared with them, one process served
 * more than two on every wire and REST scenario of the bench (docs/operations.md, "Worker processes").
 */
export function defaultWorkers(cores: number): number {
  return Math.max(1, cores - 1);
}

/** The number of worker processes `config` asks for (`workers: 0`: see `defaultWorkers`). */
export function workerCount(config: Config): number {
  return config.workers > 0 ? config.workers : defaultWorkers(availableParallelism());
}

/**
 * One worker's share of the limits that are meant for the whole service: connections, upstream
 * sessions per user, the service's budget of upstream backends and of transactions running at
 * once. Accepted connections are handed to workers in turn, so even shares keep the service-wide
 * totals. A 0 that means "sized at start-up" stays 0: the worker sizes it and takes its share
 * then (main.ts). Each user's limits are shared the same way (shared/limits.ts).
 */
export function workerShare(config: Config, workers: number): Config {
  const share = (limit: number) => Math.max(1, Math.ceil(limit / workers));
  const sized = (limit: number) => (limit === 0 ? 0 : share(limit));
  return {
    ...config,
    pgMaxConnections: share(config.pgMaxConnections),
    pgSessionsPerUser: share(config.pgSessionsPerUser),
    upstreamPoolMax: share(config.upstreamPoolMax),
    upstreamMaxSessions: sized(config.upstreamMaxSessions),
    upstreamActiveMax: sized(config.upstreamActiveMax),
  };
}
