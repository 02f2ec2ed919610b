/**
 * The Postgres wire front end: a TCP server handing each connection to `serveConnection`.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { ControlPlane } from '../control/control-plane.js';
import type { Policy } from '../policy/index.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { Cluster } from '../upstream/cluster.js';
import { FailureThrottle } from '../shared/throttle.js';
import { CancelRegistry, type CancelPeers } from './cancel.js';
import { serveConnection } from './connection.js';
import { sessionPoolFor } from '../upstream/session-pool.js';
import { loadTls } from './tls.js';

export interface WireServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface WireServerDeps {
  config: Config;
  cluster: Cluster;
  control: ControlPlane;
  policy: Policy;
  log: Logger;
  /** The service's other processes, for cancels that reach the wrong one. */
  cancelPeers?: CancelPeers;
}

export async function startWireServer(deps: WireServerDeps): Promise<WireServer> {
  const log = deps.log.child({ mod: 'wire' });
  const { config, cluster } = deps;
  const pool = sessionPoolFor(cluster, {
    maxPerRole: config.pgSessionsPerUser,
    idleMs: config.upstreamIdleMs,
    reset: 'eager',
    waitMs: config.pgStartupTimeoutMs,
    log,
  });

  const connDeps = {
    config,
    control: deps.control,
    policy: deps.policy,
    pool,
    cancels: new CancelRegistry(deps.cancelPeers),
    tls: await loadTls(config),
    throttle: new FailureThrottle(),
    secret: cluster.secret,
    log,
  };
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    void serveConnection(socket, connDeps, () => sockets.size);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.pgPort, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : config.pgPort,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
      pool.close();
    },
  };
}
