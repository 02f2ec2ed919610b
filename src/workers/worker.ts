/**
 * One worker of a service run as several processes: the whole service on the ports the primary
 * shares, with its share of the limits. It reports ready (or why it could not start) to the
 * primary, passes REST query cancels it cannot place (wire CancelRequests go through the
 * cluster: src/wire/cancel-channel.ts), and stops
 * when the primary says so or is gone.
 */
import { startService } from '../main.js';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { isMessage, workerCount, workerShare, type PrimaryMessage, type WorkerMessage } from './messages.js';
import { workerQueryCancelPeers } from './query-cancels.js';
import { metricsFromPrimary } from '../observe/cluster-metrics.js';
import { workerConnectionCounts } from './connection-counts.js';

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => (process.connected ? process.send!(message, undefined, {}, () => resolve()) : resolve()));
}

/** `/metrics` on this worker answers the sum over all workers, which the primary collects. */
const metrics = metricsFromPrimary((ref) => void send({ kind: 'metrics', ref }));
process.on('message', (m: unknown) => {
  if (isMessage<PrimaryMessage>(m) && m.kind === 'metrics-result') metrics.answer(m.ref, m.text, m.error);
});

/** `GET /usage/` on this worker counts a user's connections on every worker, through the primary. */
const connections = workerConnectionCounts((m) => void send(m));

/** Runs until the primary says stop (or disappears); resolves to the exit code. */
export async function runWorker(config: Config, log: Logger): Promise<number> {
  // The primary coordinates a terminal's Ctrl-C (sent to every process of the group); SIGTERM
  // aimed at this worker alone drains and stops it, and the primary starts another. A stop may
  // come while the service is still starting: it is kept for then. A primary that is gone (a
  // second signal made it exit at once) leaves nothing to drain for: the worker stops at once.
  process.on('SIGINT', () => undefined);
  const primaryGone = new Promise<'now'>((resolve) => process.on('disconnect', () => resolve('now')));
  const stopped = new Promise<'drain' | 'now'>((resolve) => {
    process.on('message', (m: unknown) => {
      if (isMessage<PrimaryMessage>(m) && m.kind === 'stop') resolve('drain');
    });
    void primaryGone.then(resolve);
    process.on('SIGTERM', () => resolve('drain'));
  });
  let service;
  try {
    const queryCancelPeers = workerQueryCancelPeers((m) => void send(m));
    const workers = workerCount(config);
    service = await startService(workerShare(config, workers), log, { queryCancelPeers, metrics: metrics.source, workers, connectionsEverywhere: connections.everywhere });
  } catch (err: unknown) {
    const e = err instanceof PgError ? err : new PgError(SqlState.InternalError, err instanceof Error ? err.message : String(err));
    await send({ kind: 'failed', error: e.toJSON() });
    process.disconnect?.(); // the channel would keep this process alive
    return 1;
  }
  connections.listen(service.connectionsOf);
  void send({ kind: 'ready', httpUrl: service.httpUrl, pgPort: service.pgPort });
  if ((await stopped) === 'drain') await Promise.race([service.drain(), primaryGone]);
  await service.stop();
  process.disconnect?.();
  return 0;
}
