/**
 * The primary of a service run as several processes (`workers` > 1). It owns what must exist
 * once: the embedded Postgres, the control plane's migrations, the generated TLS certificate.
 * Then it forks the workers, each a whole service (REST and wire) on the shared listening
 * sockets — node:cluster hands accepted connections to them in turn — and stays to pass REST
 * query cancels between them (wire cancels go through the cluster: src/wire/cancel-channel.ts),
 * replace a worker that dies, and stop them all before Postgres.
 */
import cluster, { type Worker } from 'node:cluster';
import { ControlPlane } from '../control/control-plane.js';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { openCluster } from '../upstream/cluster.js';
import { loadTls } from '../wire/tls.js';
import { workersMetrics } from '../observe/cluster-metrics.js';
import { isMessage, type PrimaryMessage, type WorkerMessage } from './messages.js';
import { QueryCancelBroker } from './query-cancels.js';
import { ConnectionsBroker } from './connection-counts.js';

export interface RunningService {
  readonly httpUrl: string;
  readonly pgPort: number;
  /** Drains (see `Service.drain`: every worker at once), then stops. */
  stop(): Promise<void>;
}

/** A worker that stops of itself, once the service runs, is replaced after this long. */
const RESTART_DELAY_MS = 1000;
/** A worker still running this long after its drain should have ended is killed. */
const STOP_GRACE_MS = 15_000;

/** Sends if the worker still listens; one that is leaving may close the channel meanwhile, which is no error. */
function send(worker: Worker, message: PrimaryMessage): void {
  if (worker.isConnected()) worker.send(message, undefined, () => undefined);
}

function exited(worker: Worker): Promise<void> {
  return worker.isDead() ? Promise.resolve() : new Promise((resolve) => worker.once('exit', () => resolve()));
}

async function stopWorker(worker: Worker, drainMs: number): Promise<void> {
  send(worker, { kind: 'stop' });
  const timer = setTimeout(() => worker.process.kill('SIGKILL'), drainMs + STOP_GRACE_MS);
  await exited(worker);
  clearTimeout(timer);
}

/** Starts the shared parts and `count` workers; resolves once every worker serves. */
export async function startPrimary(config: Config, log: Logger, count: number): Promise<RunningService> {
  const upstream = await openCluster(config, log, { check: !config.upstreamUrl });
  try {
    // An external upstream down at start-up: the workers start anyway, each waiting for it (and migrating under a lock) by itself.
    await (await ControlPlane.openWhenReachable(upstream, log, { listen: false })).close();
    await loadTls(config);
  } catch (err: unknown) {
    await upstream.close();
    throw err;
  }
  // Workers reach the embedded cluster as an external one; an upstream URL they read themselves.
  const env = config.upstreamUrl ? {} : { REPOBASE_UPSTREAM_URL: String(upstream.adminConfig.connectionString) };
  const workers = new Set<Worker>();
  const queryCancels = new QueryCancelBroker(send);
  const connections = new ConnectionsBroker(send);
  let stopping = false;

  const stopAll = async () => {
    stopping = true;
    await Promise.all([...workers].map((w) => stopWorker(w, config.drainTimeoutMs)));
    await upstream.close();
  };

  const fork = (onReady: (m: Extract<WorkerMessage, { kind: 'ready' }>) => void, onFailed: (e: PgError) => void, onExit: (code: number | null, signal: string | null) => void) => {
    const worker = cluster.fork(env);
    workers.add(worker);
    worker.on('error', (err) => log.debug({ err }, 'worker channel error'));
    worker.on('message', (m: unknown) => {
      if (!isMessage<WorkerMessage>(m)) return;
      if (m.kind === 'ready') onReady(m);
      else if (m.kind === 'failed') onFailed(new PgError(m.error.code, m.error.message, { hint: m.error.hint, detail: m.error.detail }));
      else if (m.kind === 'query-cancel') queryCancels.ask(worker, m, [...workers].filter((other) => other !== worker && other.isConnected()));
      else if (m.kind === 'query-cancel-result') queryCancels.answer(m);
      else if (m.kind === 'connections') connections.ask(worker, m, [...workers].filter((w) => w.isConnected()));
      else if (m.kind === 'connections-result') connections.answer(m);
      else if (m.kind === 'metrics') workersMetrics().then((text) => send(worker, { kind: 'metrics-result', ref: m.ref, text }), (err: unknown) => send(worker, { kind: 'metrics-result', ref: m.ref, error: String(err) }));
    });
    worker.on('exit', (code, signal) => {
      workers.delete(worker);
      onExit(code, signal);
    });
  };

  // Start-up: every worker reports ready, or the first failure stops the others and is the answer.
  const ready = await new Promise<{ httpUrl: string; pgPort: number }>((resolve, reject) => {
    let pending = count;
    let failure: PgError | undefined;
    const fail = (err: PgError) => {
      if (failure) return;
      failure = err;
      stopAll().then(
        () => reject(err),
        () => reject(err),
      );
    };
    for (let i = 0; i < count; i++) {
      let started = false;
      fork(
        (m) => {
          started = true;
          if (--pending === 0 && !failure) resolve(m);
        },
        fail,
        (code, signal) => {
          if (!started) fail(new PgError(SqlState.InternalError, `a worker stopped while starting (${signal ?? `exit code ${code}`})`, { hint: 'its log above says why' }));
          else supervise(code, signal);
        },
      );
    }
  });

  // Running: a worker that stops of itself is logged and replaced.
  function supervise(code: number | null, signal: string | null): void {
    if (stopping) return;
    log.error({ code, signal }, 'a worker stopped; starting another');
    setTimeout(() => {
      if (stopping) return;
      fork(
        () => log.info('replacement worker serving'),
        (err) => log.error({ err }, 'replacement worker failed to start'),
        (c, s) => supervise(c, s),
      );
    }, RESTART_DELAY_MS).unref();
  }

  log.info({ workers: count }, 'workers serving');
  return { ...ready, stop: stopAll };
}
