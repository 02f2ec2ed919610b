/**
 * Composition root: config → logger → upstream cluster → control plane → front ends.
 */
import { ControlPlane } from './control/control-plane.js';
import { buildApp } from './http/app.js';
import { AsyncQueries } from './http/async-queries.js';
import { openSchemaStreams } from './http/live-schema.js';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from './shared/config.js';
import { PgError, SqlState } from './shared/errors.js';
import { defaultLimits, loginSettings, shareOf } from './shared/limits.js';
import type { Logger } from './shared/logger.js';
import { openCluster } from './upstream/cluster.js';
import { RolePools } from './upstream/role-pools.js';
import { sessionPoolFor } from './upstream/session-pool.js';
import { BackendBudget } from './upstream/budget.js';
import { Admission } from './upstream/admission.js';
import { HeavyUsers } from './upstream/heavy-users.js';
import { parkedBackends } from './upstream/parked-backends.js';
import { processActiveMax, processBudget } from './upstream/sizing.js';
import type { UpstreamSession } from './upstream/session.js';
import { watchAdmission } from './observe/admission-metrics.js';
import { createPolicy } from './policy/index.js';
import type { QueryCancelPeers } from './http/running-queries.js';
import { openCancelChannel } from './wire/cancel-channel.js';
import { startWireServer } from './wire/server.js';
import { collectProcessMetrics } from './observe/metrics.js';
import { trackQueued, warnWhenQueued } from './observe/queued.js';
import { localMetricsSource, startMetricsServer, type MetricsSource } from './observe/metrics-server.js';
import { tenantOf } from './upstream/roles.js';

export interface Service {
  readonly httpUrl: string;
  /** Port of the Postgres wire front end. */
  readonly pgPort: number;
  /** Where `GET /metrics` answers: on the HTTP port, or on `metricsPort` when set. */
  readonly metricsUrl: string;
  readonly control: ControlPlane;
  /** A user's wire connections open on this process. */
  connectionsOf(user: string): number;
  /**
   * Takes no new work and lets what runs finish, for up to `drainTimeoutMs`: the wire front end
   * stops listening and ends its clients as their transactions end (see `WireServer.drain`);
   * `/healthz` and new REST requests answer 503 while REST requests in flight finish. `stop` follows.
   */
  drain(): Promise<void>;
  /** Stops the front ends, then the control plane, then (if started here) Postgres. */
  stop(): Promise<void>;
}

function listenError(err: unknown, what: string, host: string, port: number, envName: string): unknown {
  if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    return new PgError(SqlState.InternalError, `${what} cannot listen on ${host}:${port}: the port is already in use`, {
      hint: `stop whatever uses it, or choose another port with ${envName}`,
    });
  }
  return err;
}

export interface ServiceOptions {
  /** The worker processes of the service (this one among them): each enforces its share of the service-wide limits. Default 1. */
  workers?: number;
  /** Set when this process is one of several workers sharing the ports: where REST query cancels (`POST /query/<id>/cancel`) not for this process go. */
  queryCancelPeers?: QueryCancelPeers;
  /** What `GET /metrics` answers; default: this process's metrics (a worker's: the sum over all workers). */
  metrics?: MetricsSource;
  /** A user's wire connections on every worker (through the primary), for `GET /usage/`; default: this process's. */
  connectionsEverywhere?: (user: string) => Promise<number>;
}

/**
 * Resolves once no REST request is in flight, or at `until`. An event stream (`GET /events`)
 * runs until its client leaves and has nothing to finish: it does not count.
 */
async function restFinished(inFlight: () => number, until: number): Promise<void> {
  while (inFlight() - openSchemaStreams() > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
}

export async function startService(config: Config, log: Logger, options: ServiceOptions = {}): Promise<Service> {
  // An external upstream may be down while the service starts: it then starts anyway (see ControlPlane.openWhenReachable).
  collectProcessMetrics();
  const unwarn = warnWhenQueued(log, config.queuedWarnBytes);
  const cluster = await openCluster(config, log, { check: !config.upstreamUrl, serving: true });
  const cleanup: (() => Promise<void>)[] = [async () => unwarn(), () => cluster.close()];
  const stop = async () => {
    for (const step of cleanup.reverse().splice(0)) await step();
  };
  try {
    const control = await (config.upstreamUrl ? ControlPlane.openWhenReachable : ControlPlane.open)(cluster, log, { listen: true, auditRetentionDays: config.auditRetentionDays, defaultLimits: defaultLimits(config), storageRefreshMs: config.storageRefreshMs });
    cleanup.push(() => control.close());
    const policy = await createPolicy({ maxStatementBytes: config.maxStatementBytes });
    cleanup.push(() => policy.close());
    // Wire CancelRequests for other processes (workers or instances) go through the cluster.
    const cancelPeers = await openCancelChannel(cluster.adminConfig, cluster.admin, log);
    cleanup.push(() => cancelPeers.close());
    // One budget of backends and one fair queue of transactions for the wire front end and
    // POST /query/ (uploads' pools are apart, see RolePools).
    const workers = options.workers ?? 1;
    const limitsOf = (user: string) => shareOf(control.limits.of(user), workers);
    // A scoped key's role (`alice#3fde…`) logs in with its user's limits.
    const settingsOf = (role: string) => loginSettings(control.limits.of(tenantOf(role)));
    const budget = new BackendBudget(await processBudget(config, cluster.admin, workers, log));
    const active = processActiveMax(config, workers);
    const admission = new Admission({
      max: active,
      reserve: active,
      limitsOf,
      onWaited: (user, ms) => control.usage.add(user, { queuedMs: ms }),
      sampleParked: () => parkedBackends(cluster.admin),
      ...(cluster.weight && config.heavyUserNice > 0 && { heavy: new HeavyUsers(cluster.weight) }),
    });
    cleanup.push(async () => admission.close());
    const unwatchAdmission = watchAdmission(admission);
    cleanup.push(async () => unwatchAdmission());
    const wire = await startWireServer({ config, cluster, control, policy, log, cancelPeers, budget, admission, settingsOf, limitsOf }).catch((err: unknown) => {
      throw listenError(err, 'the Postgres wire server', config.host, config.pgPort, 'REPOBASE_PG_PORT');
    });
    cleanup.push(() => wire.close());
    const pools = new RolePools({ cluster, config, log });
    cleanup.push(() => pools.close());
    // A REST statement ends by its user's statement timeout upstream; silent a second past it, the network is taken as gone.
    const silenceMs = (session: UpstreamSession) => {
      const timeout = control.limits.of(tenantOf(session.user)).statementTimeoutMs;
      return timeout === 0 ? 0 : timeout + 1_000;
    };
    const sessions = sessionPoolFor(cluster, { maxPerRole: config.upstreamPoolMax, idleMs: config.upstreamIdleMs, reset: 'lazy', waitMs: Math.min(10_000, config.pgPoolTimeoutMs), budget, admission, settingsOf, metricsName: 'rest', silenceMs, log });
    cleanup.push(async () => sessions.close());
    const queries = await AsyncQueries.start({ cluster, control, policy, config, log, budget });
    cleanup.push(() => queries.close());
    // Limits an admin changed: new turns, and sessions logged in with the new timeouts from now on.
    const unfollow = control.limits.onChange((users) => {
      admission.refresh(users);
      for (const user of users) {
        wire.renew(user);
        sessions.renew(user);
      }
    });
    cleanup.push(async () => unfollow());
    let draining = false;
    const app = await buildApp({ config, control, log, policy, pools, sessions, queries, wirePort: wire.port, connectionsOf: options.connectionsEverywhere ?? wire.connectionsOf, queryCancelPeers: options.queryCancelPeers, draining: () => draining, metrics: config.metricsPort === 0 ? (options.metrics ?? localMetricsSource) : undefined });
    // Requests in flight, for the drain: a count and one listener function shared by all. A Set
    // of the responses (a long-lived table pointing at every request's objects) made each
    // request's objects outlive the young generation: 1–2 KB more promoted per REST request,
    // and the collector's time per request several times the build's before.
    let inFlight = 0;
    const ended = (): void => void inFlight--;
    app.server.on('connection', (socket: Socket) => trackQueued('client', socket));
    app.server.on('request', (_req, res: ServerResponse) => {
      inFlight++;
      res.once('close', ended);
    });
    await app.listen({ host: config.host, port: config.httpPort }).catch((err: unknown) => {
      throw listenError(err, 'the HTTP server', config.host, config.httpPort, 'REPOBASE_HTTP_PORT');
    });
    cleanup.push(() => app.close());
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.httpPort;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    let metricsUrl = `http://${host}:${port}/metrics`;
    if (config.metricsPort !== 0) {
      const server = await startMetricsServer(config.host, config.metricsPort, options.metrics ?? localMetricsSource).catch((err: unknown) => {
        throw listenError(err, 'the metrics server', config.host, config.metricsPort, 'REPOBASE_METRICS_PORT');
      });
      cleanup.push(() => server.close());
      metricsUrl = `http://${host}:${server.port}/metrics`;
    }
    const drain = async () => {
      draining = true;
      const until = Date.now() + config.drainTimeoutMs;
      await Promise.all([wire.drain(config.drainTimeoutMs), restFinished(() => inFlight, until)]);
    };
    return { httpUrl: `http://${host}:${port}`, pgPort: wire.port, metricsUrl, control, connectionsOf: wire.connectionsOf, drain, stop };
  } catch (err: unknown) {
    await stop();
    throw err;
  }
}
