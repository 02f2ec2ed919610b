/**
 * Composition root: config → logger → upstream cluster → control plane → front ends.
 */
import { ControlPlane } from './control/control-plane.js';
import { buildApp } from './http/app.js';
import type { Config } from './shared/config.js';
import { PgError, SqlState } from './shared/errors.js';
import type { Logger } from './shared/logger.js';
import { openCluster } from './upstream/cluster.js';
import { RolePools } from './upstream/role-pools.js';
import { sessionPoolFor } from './upstream/session-pool.js';
import { createPolicy } from './policy/index.js';
import type { QueryCancelPeers } from './http/running-queries.js';
import type { CancelPeers } from './wire/cancel.js';
import { startWireServer } from './wire/server.js';

export interface Service {
  readonly httpUrl: string;
  /** Port of the Postgres wire front end. */
  readonly pgPort: number;
  readonly control: ControlPlane;
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
  /** Set when this process is one of several workers sharing the ports: where wire CancelRequests not for this process go. */
  cancelPeers?: CancelPeers;
  /** Likewise for REST query cancels (`POST /query/<id>/cancel`). */
  queryCancelPeers?: QueryCancelPeers;
}

export async function startService(config: Config, log: Logger, options: ServiceOptions = {}): Promise<Service> {
  const cluster = await openCluster(config, log);
  const cleanup: (() => Promise<void>)[] = [() => cluster.close()];
  const stop = async () => {
    for (const step of cleanup.reverse().splice(0)) await step();
  };
  try {
    const control = await ControlPlane.open(cluster, log, { listen: true });
    cleanup.push(() => control.close());
    const policy = await createPolicy({ maxStatementBytes: config.maxStatementBytes });
    cleanup.push(() => policy.close());
    const wire = await startWireServer({ config, cluster, control, policy, log, cancelPeers: options.cancelPeers }).catch((err: unknown) => {
      throw listenError(err, 'the Postgres wire server', config.host, config.pgPort, 'REPOBASE_PG_PORT');
    });
    cleanup.push(() => wire.close());
    const pools = new RolePools({ cluster, config, log });
    cleanup.push(() => pools.close());
    const sessions = sessionPoolFor(cluster, { maxPerRole: config.upstreamPoolMax, idleMs: config.upstreamIdleMs, reset: 'lazy', waitMs: 10_000, log });
    cleanup.push(async () => sessions.close());
    const app = await buildApp({ config, control, log, policy, pools, sessions, wirePort: wire.port, queryCancelPeers: options.queryCancelPeers });
    await app.listen({ host: config.host, port: config.httpPort }).catch((err: unknown) => {
      throw listenError(err, 'the HTTP server', config.host, config.httpPort, 'REPOBASE_HTTP_PORT');
    });
    cleanup.push(() => app.close());
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.httpPort;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    return { httpUrl: `http://${host}:${port}`, pgPort: wire.port, control, stop };
  } catch (err: unknown) {
    await stop();
    throw err;
  }
}
