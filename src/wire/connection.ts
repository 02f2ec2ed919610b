/**
 * One client connection from its first byte to the hand-over to the relay: SSLRequest/TLS,
 * GSSENCRequest, CancelRequest, StartupMessage, authentication, the upstream session, and the
 * greeting (ParameterStatus, BackendKeyData, ReadyForQuery).
 */
import { randomBytes } from 'node:crypto';
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
  isWithoutAnswer,
  type StartupMessage,
} from '../protocol/index.js';
import { FrameQueue } from './frame-queue.js';
import { countError } from '../observe/metrics.js';
import type { MessageBudget } from './large-messages.js';
import type { LargeObjectFunctions } from './large-objects.js';
import { Relay } from './relay.js';
import type { SessionPool } from '../upstream/session-pool.js';
import { upstreamStartup } from './startup-params.js';
import type { TlsMaterial } from './tls.js';
import { ClientState, type BuiltinFunctions } from './client-state.js';
import { Pooling } from './pooling.js';
import { sendersChannel } from './notifications.js';
import type { SequenceFreeTables } from './sequences.js';
import { ClientActivity, type Activities } from './activity.js';
import { BASELINE, type StartupSettings } from './startup-settings.js';
import { isScoped } from '../control/key-scope.js';
import { keyOfPrincipal } from '../control/audit.js';
import { keyLabel } from '../shared/key-words.js';
import type { WireTenancy } from './tenancy.js';

export interface WireDeps {
  config: Config;
  control: ControlPlane;
  policy: Policy;
  pool: SessionPool;
  /** What start-up parameters make of a session (backends log in with none of a client's). */
  startup: StartupSettings;
  builtins: BuiltinFunctions;
  largeObjects: LargeObjectFunctions;
  largeMessages: MessageBudget;
  cancels: CancelRegistry;
  /** Tables known to take no default from a sequence (sequences.ts). */
  sequenceFree: SequenceFreeTables;
  /** The wire clients of this process, as pg_stat_activity shows them (activity.ts). */
  activities: Activities;
  tls: TlsMaterial;
  throttle: FailureThrottle;
  secret: string;
  log: Logger;
  /** Told of each client once its session starts (the server stops them when it drains). */
  onSession?: (raw: Socket, relay: Relay, user: string) => void;
  /** Per-user connection counts and timeouts (tenancy.ts). */
  tenancy?: WireTenancy | undefined;
}

function fatal(code: string, message: string, hint?: string): PgError {
  return new PgError(code, message, { severity: 'FATAL', hint });
}

function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1' || (address?.startsWith('127.') ?? false);
}

/**
 * Database names clients pick by default: libpq's is the user's own name; pgAdmin, DBeaver and
 * `psql -l` ask for `postgres`, some tools for `template1`. All reach the service database.
 */
const DEFAULT_DATABASES: ReadonlySet<string> = new Set(['postgres', 'template1']);

/**
 * `repobase` (or a default name) → no repo; `alice/sales` → that repo as the search path;
 * anything else is refused.
 */
function repoOfDatabase(database: string, serviceDatabase: string, user: string): string[] | undefined {
  if (database === serviceDatabase || database === user || DEFAULT_DATABASES.has(database)) return undefined;
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

/** The first chunk a client sends, left unread (the connection paused); undefined if it closes first. */
function peek(socket: Socket): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      done();
      socket.pause();
      socket.unshift(chunk);
      resolve(chunk);
    };
    const onEnd = () => {
      done();
      resolve(undefined);
    };
    const done = () => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
    };
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
  });
}

/** A TLS handshake's first byte (a handshake record): a client negotiating TLS directly. */
const TLS_HANDSHAKE = 0x16;

/**
 * The largest TLS record sent: Postgres' own (its send buffer is 8 KiB). libpq reads only what
 * fits its free buffer; the rest of a larger record waits decrypted inside OpenSSL, where a
 * non-blocking client's select() never sees it (psycopg 3 then waits for ever for the last rows).
 */
const TLS_RECORD_BYTES = 8192;

function startTls(raw: Socket, deps: WireDeps): TLSSocket {
  const secure = new TLSSocket(raw, { isServer: true, secureContext: deps.tls.context, ALPNProtocols: ['postgresql'] });
  secure.setMaxSendFragment(TLS_RECORD_BYTES);
  secure.on('error', () => secure.destroy());
  secure.setNoDelay?.(true);
  return secure;
}

/**
 * Reads start-up requests until the StartupMessage; undefined when the connection was a cancel
 * or closed before sending one. TLS comes either after an SSLRequest, or at once (Postgres 17's
 * `sslnegotiation=direct`: the first bytes are a TLS handshake, which must name the
 * `postgresql` protocol in ALPN, as Postgres requires).
 */
async function readStartup(raw: Socket, deps: WireDeps, encrypted: (socket: TLSSocket) => void): Promise<Started | undefined> {
  const first = await peek(raw);
  if (!first) return undefined;
  const direct = first[0] === TLS_HANDSHAKE;
  let socket: Socket = raw;
  if (direct) encrypted((socket = startTls(raw, deps)));
  let tls = direct;
  let reader = new FrameReader({ source: 'frontend', startup: true });
  let queue = new FrameQueue(socket, reader);
  for (;;) {
    const { frame } = await queue.next();
    if (direct && (socket as TLSSocket).alpnProtocol !== 'postgresql') {
      throw fatal(SqlState.ProtocolViolation, 'received direct SSL connection request without ALPN protocol negotiation extension', 'connect with sslnegotiation=postgres, or a client that names "postgresql" in ALPN');
    }
    const msg = decodeStartup(frame);
    switch (msg.kind) {
      case 'ssl_request': {
        if (tls) throw fatal(SqlState.ProtocolViolation, 'SSLRequest over an encrypted connection');
        queue.detach();
        socket.write(SSL_YES);
        encrypted((socket = startTls(raw, deps)));
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
    const started = await readStartup(raw, deps, (secure) => (socket = secure)); // errors go over TLS from then on
    if (!started) return;
    socket = started.socket;
    const { reader, queue, startup } = started;
    if ((startup.protocol & 0xffff) !== 0) {
      const unknown = Object.keys(startup.params).filter((k) => k.startsWith('_pq_.'));
      socket.write(buildNegotiateProtocolVersion(RequestCode.ProtocolV3, unknown));
    }
    const user = startup.params.user;
    if (!user) throw fatal(SqlState.InvalidAuthorizationSpecification, 'no user name specified in the startup packet');
    deps.control.assertReachable(); // 08006 while the upstream has not been reached since start-up
    const repoPath = repoOfDatabase(startup.params.database || user, deps.config.serviceDatabase, user);
    const upstreamParams = upstreamStartup(startup.params, repoPath);
    if (active() > deps.config.pgMaxConnections) throw fatal(SqlState.TooManyConnections, 'sorry, too many clients already');
    if (deps.config.pgAuthMethod === 'password' && !started.tls && !(deps.config.pgCleartextLoopback && isLoopback(raw.remoteAddress))) {
      throw fatal(SqlState.InvalidAuthorizationSpecification, 'password authentication needs an encrypted connection', 'connect with sslmode=require');
    }
    const write = (b: Buffer) => void socket.write(b);
    const connId = randomBytes(6).toString('hex');
    const principal = await authenticateClient(queue, write, user, raw.remoteAddress ?? '', {
      control: deps.control,
      method: deps.config.pgAuthMethod,
      secret: deps.secret,
      throttle: deps.throttle,
      connId,
    });
    const auditOrigin = { frontEnd: 'wire' as const, source: raw.remoteAddress ?? null, requestId: connId, ...keyOfPrincipal(principal) };
    reader.setMaxMessageBytes(deps.config.pgMaxMessageBytes);
    deps.tenancy?.connect(principal.user, raw); // 53300 past the user's connections
    await deps.control.rights(principal); // warm the cache the relay reads synchronously
    // The user's own role, or a scoped key's (only its scope's privileges, DESIGN.md §10).
    const role = principal.role;
    const { params } = upstreamParams;
    // Greet with what a login with these settings reports, and take an upstream backend only when
    // the client first sends something: idle clients cost no upstream backend.
    // In session mode (pgPoolMode session) the client is pooled like any other, but keeps the
    // first backend it takes for its whole session (a pin of its own).
    const settings = await deps.startup.of(role, params);
    const greeting = settings.greeting;
    const client = new ClientState(settings.greeting, settings.other);
    client.sessionMode = deps.config.pgPoolMode === 'session';
    const pooling = new Pooling(client, {
      takeIdle: (prefer) => deps.pool.takeIdle(role, BASELINE, prefer),
      acquire: (prefer, done) => deps.pool.acquireThen(role, BASELINE, prefer, done),
      release: (s, how) => deps.pool.release(role, BASELINE, s, how),
      lend: (s, revoke) => deps.pool.lend(role, BASELINE, s, revoke),
      reclaim: (s) => deps.pool.reclaim(role, BASELINE, s),
      builtins: deps.builtins,
      prepareText: (p) => relay.prepareText(p),
      onRestoreFailed: (error) => relay.restoreFailed(error),
      onLost: (message) => relay.lost(message),
      sendersChannel: sendersChannel(principal.user), // the user's: its keys' sessions notify its listeners
      role,
      sequenceFree: deps.sequenceFree,
      activities: deps.activities,
    });
    clearTimeout(timer);
    let forget = (): void => undefined;
    const session = { searchPath: upstreamParams.searchPath, defaultSearchPath: upstreamParams.searchPath };
    const relay: Relay = new Relay(
      socket,
      reader,
      principal,
      session,
      {
        policy: deps.policy,
        control: deps.control,
        log,
        auditOrigin,
        responseTimeoutMs: deps.config.upstreamResponseTimeoutMs,
        sendTimeoutMs: deps.config.pgSendTimeoutMs,
        largeObjects: isScoped(principal.key) ? scopedLargeObjects(principal.keyId, principal.key.name) : deps.largeObjects,
        largeMessages: deps.largeMessages,
        greeting,
        acquire: () => deps.pool.acquire(role, BASELINE),
        release: (s, how) => deps.pool.release(role, BASELINE, s, how),
        pooling,
        signal: (kind, processId) => deps.cancels.signal(kind, processId, role),
      },
      () => {
        deps.cancels.unregister(key.processId);
        forget();
        deps.control.keys.unwatch(principal, keyEnd);
      },
    );
    // A revocation or the expiry of the key ends the session (57P01 naming which), wherever it happens.
    const keyEnd = {
      cancel: (reason: string) => relay.terminate(new PgError(SqlState.AdminShutdown, `terminating connection: ${reason}`, { hint: 'connect again with another API key' })),
    };
    deps.control.keys.watch(principal, keyEnd);
    const key = deps.cancels.register({
      user: role,
      cancel: () => relay.cancel(),
      terminate: () => relay.terminate(new PgError(SqlState.AdminShutdown, 'terminating connection due to administrator command')),
    });
    pooling.client.processId = key.processId;
    const activity = new ClientActivity(role, key.processId, raw.remoteAddress, raw.remotePort, () => ({ applicationName: pooling.client.reported.get('application_name') ?? '', backend: relay.backendPid }));
    forget = deps.activities.add(activity);
    relay.activity = activity;
    // The greeting in one write, as Postgres sends it: a write per message was 16 system calls per connection.
    socket.cork();
    for (const [name, value] of greeting) socket.write(buildParameterStatus(name, value));
    socket.write(buildBackendKeyData(key.processId, key.secretKey));
    socket.write(buildReadyForQuery('I'));
    socket.uncork();
    relay.start(queue.detach());
    deps.onSession?.(raw, relay, role);
    if (deps.config.pgIdleTimeoutMs > 0) idleTimeout(socket, relay, deps.config.pgIdleTimeoutMs);
  } catch (err: unknown) {
    clearTimeout(timer);
    if (isWithoutAnswer(err)) return void socket.destroy();
    const e = err instanceof PgError ? err : internalError();
    countError('wire', 'proxy', e.code);
    if (!(err instanceof PgError)) log.error({ err }, 'wire start-up failed');
    if (!socket.destroyed) socket.end(buildErrorResponse(e, 'FATAL'));
  }
}

/** The large-object functions for a scoped key: none (large objects belong to the user, not to a repo). */
function scopedLargeObjects(keyId: string, name: string): LargeObjectFunctions {
  return {
    call: () => {
      throw new PgError(SqlState.InsufficientPrivilege, `${keyLabel(keyId, name)} cannot use large objects: they belong to the user, not to a repo`, { hint: 'use a full key' });
    },
  };
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
