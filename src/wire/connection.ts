/**
 * One client connection from its first byte to the hand-over to the relay: SSLRequest/TLS,
 * GSSENCRequest, CancelRequest, StartupMessage, authentication, the upstream session, and the
 * greeting (ParameterStatus, BackendKeyData, ReadyForQuery).
 */
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { ControlPlane } from '../control/control-plane.js';
import { repoNameProblem, userNameProblem } from '../control/names.js';
import type { Policy } from '../policy/index.js';
import type { Config } from '../shared/config.js';
import { PgError, SqlState, internalError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { authenticateClient, type FailureThrottle } from './auth.js';
import type { CancelRegistry } from './cancel.js';
import {
  FrameReader,
  GSSENC_NO,
  RequestCode,
  SSL_YES,
  buildBackendKeyData,
  buildErrorResponse,
  buildNegotiateProtocolVersion,
  buildParameterStatus,
  buildReadyForQuery,
  decodeStartup,
  type StartupMessage,
} from '../protocol/index.js';
import { FrameQueue } from './frame-queue.js';
import { Relay } from './relay.js';
import type { SessionPool } from '../upstream/session-pool.js';
import { upstreamStartup } from './startup-params.js';
import type { TlsMaterial } from './tls.js';

export interface WireDeps {
  config: Config;
  control: ControlPlane;
  policy: Policy;
  pool: SessionPool;
  cancels: CancelRegistry;
  tls: TlsMaterial;
  throttle: FailureThrottle;
  secret: string;
  log: Logger;
}

function fatal(code: string, message: string, hint?: string): PgError {
  return new PgError(code, message, { severity: 'FATAL', hint });
}

function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1' || (address?.startsWith('127.') ?? false);
}

/** `repobase` → no repo; `alice/sales` → that repo as the search path; anything else is refused. */
function repoOfDatabase(database: string, serviceDatabase: string): string[] | undefined {
  if (database === serviceDatabase) return undefined;
  const slash = database.indexOf('/');
  if (slash > 0 && !userNameProblem(database.slice(0, slash)) && !repoNameProblem(database.slice(slash + 1))) return [database];
  throw fatal(SqlState.InvalidCatalogName, `database "${database}" does not exist`, `connect to database "${serviceDatabase}", or to a repo as "<user>/<repo>"`);
}

interface Started {
  socket: Socket;
  reader: FrameReader;
  queue: FrameQueue;
  startup: StartupMessage;
  tls: boolean;
}

/** Reads start-up requests until the StartupMessage; undefined when the connection was a cancel. */
async function readStartup(raw: Socket, deps: WireDeps): Promise<Started | undefined> {
  let socket: Socket = raw;
  let tls = false;
  let reader = new FrameReader({ source: 'frontend', startup: true });
  let queue = new FrameQueue(socket, reader);
  for (;;) {
    const { frame } = await queue.next();
    const msg = decodeStartup(frame);
    switch (msg.kind) {
      case 'ssl_request': {
        if (tls) throw fatal(SqlState.ProtocolViolation, 'SSLRequest over an encrypted connection');
        queue.detach();
        socket.write(SSL_YES);
        const secure = new TLSSocket(raw, { isServer: true, secureContext: deps.tls.context, ALPNProtocols: ['postgresql'] });
        secure.on('error', () => secure.destroy());
        secure.setNoDelay?.(true);
        socket = secure;
        tls = true;
        reader = new FrameReader({ source: 'frontend', startup: true });
        queue = new FrameQueue(socket, reader);
        break;
      }
      case 'gssenc_request':
        socket.write(GSSENC_NO);
        break;
      case 'cancel_request':
        queue.detach();
        await deps.cancels.cancel(msg.processId, msg.secretKey);
        socket.destroy();
        return undefined;
      case 'startup':
        return { socket, reader, queue, startup: msg, tls };
    }
  }
}

/** Serves one client connection until it ends. `active()` is the number of connections now. */
export async function serveConnection(raw: Socket, deps: WireDeps, active: () => number): Promise<void> {
  const log = deps.log;
  raw.setNoDelay(true);
  raw.on('error', () => raw.destroy());
  let socket: Socket = raw;
  const timer = setTimeout(() => {
    socket.end(buildErrorResponse(fatal(SqlState.ConnectionFailure, `start-up did not finish within ${deps.config.pgStartupTimeoutMs} ms`), 'FATAL'));
    socket.destroy();
  }, deps.config.pgStartupTimeoutMs);
  try {
    const started = await readStartup(raw, deps);
    if (!started) return;
    socket = started.socket;
    const { reader, queue, startup } = started;
    if ((startup.protocol & 0xffff) !== 0) {
      const unknown = Object.keys(startup.params).filter((k) => k.startsWith('_pq_.'));
      socket.write(buildNegotiateProtocolVersion(RequestCode.ProtocolV3, unknown));
    }
    const user = startup.params.user;
    if (!user) throw fatal(SqlState.InvalidAuthorizationSpecification, 'no user name specified in the startup packet');
    const repoPath = repoOfDatabase(startup.params.database || deps.config.serviceDatabase, deps.config.serviceDatabase);
    const upstreamParams = upstreamStartup(startup.params, repoPath);
    if (active() > deps.config.pgMaxConnections) throw fatal(SqlState.TooManyConnections, 'sorry, too many clients already');
    if (deps.config.pgAuthMethod === 'password' && !started.tls && !(deps.config.pgCleartextLoopback && isLoopback(raw.remoteAddress))) {
      throw fatal(SqlState.InvalidAuthorizationSpecification, 'password authentication needs an encrypted connection', 'connect with sslmode=require');
    }
    const write = (b: Buffer) => void socket.write(b);
    const principal = await authenticateClient(queue, write, user, raw.remoteAddress ?? '', {
      control: deps.control,
      method: deps.config.pgAuthMethod,
      secret: deps.secret,
      throttle: deps.throttle,
    });
    reader.setMaxMessageBytes(deps.config.pgMaxMessageBytes);
    await deps.control.rights(principal.user); // warm the cache the relay reads synchronously
    const acquire = () => deps.pool.acquire(principal.user, upstreamParams.params);
    // Greet with what a login with these settings reports, and take an upstream session only when
    // the client first sends something: idle clients cost no upstream backend.
    const greeting = await deps.pool.greeting(principal.user, upstreamParams.params);
    clearTimeout(timer);
    const session = { searchPath: upstreamParams.searchPath, defaultSearchPath: upstreamParams.searchPath };
    const relay = new Relay(socket, reader, acquire, principal, session, { policy: deps.policy, control: deps.control, log }, (used, clean) => {
      deps.cancels.unregister(key.processId);
      if (used) deps.pool.release(principal.user, upstreamParams.params, used, clean);
    });
    const key = deps.cancels.register(() => {
      const s = relay.currentUpstream;
      return s && { host: s.host, port: s.port, processId: s.processId, secretKey: s.secretKey };
    });
    for (const [name, value] of greeting) socket.write(buildParameterStatus(name, value));
    socket.write(buildBackendKeyData(key.processId, key.secretKey));
    socket.write(buildReadyForQuery('I'));
    relay.start(queue.detach());
    if (deps.config.pgIdleTimeoutMs > 0) idleTimeout(socket, relay, deps.config.pgIdleTimeoutMs);
  } catch (err: unknown) {
    clearTimeout(timer);
    const e = err instanceof PgError ? err : internalError();
    if (!(err instanceof PgError)) log.error({ err }, 'wire start-up failed');
    if (!socket.destroyed) socket.end(buildErrorResponse(e, 'FATAL'));
  }
}

/** Closes a client idle outside a transaction for `ms` (57P05, as Postgres' idle_session_timeout). */
function idleTimeout(socket: Socket, relay: Relay, ms: number): void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (relay.transactionStatus !== 'I') return arm();
      socket.end(buildErrorResponse(fatal('57P05', 'terminating connection due to idle-session timeout'), 'FATAL'));
    }, ms);
    timer.unref();
  };
  socket.on('data', arm);
  socket.on('close', () => clearTimeout(timer));
  arm();
}
