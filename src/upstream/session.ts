/**
 * A raw protocol session to the upstream Postgres, logged in as the user's own role. The relay
 * forwards client frames onto its socket unchanged, so it speaks the protocol itself rather
 * than through a driver.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { PgError, SqlState } from '../shared/errors.js';
import { clientProof, saltedPassword, scramAttributes, serverSignature, hmac } from '../shared/scram.js';
import { DIRECT_READS } from '../shared/socket-reads.js';
import { trackQueued } from '../observe/queued.js';
import {
  BackendCode,
  FrameReader,
  buildCopyFail,
  buildPasswordMessage,
  buildSaslInitialResponse,
  buildSaslResponse,
  buildSslRequest,
  buildStartupMessage,
  buildSync,
  decodeAuthentication,
  decodeBackendKeyData,
  decodeErrorResponse,
  decodeParameterStatus,
  decodeReadyForQuery,
  type TransactionStatus,
} from '../protocol/index.js';
import { newHold, type Hold } from './tenant.js';
import { cancelUpstream } from './cancel-upstream.js';

/** How long a session left with work in flight may take to come back to idle (see `settle`) before it is closed instead. */
const SETTLE_GRACE_MS = 5_000;
const SETTLE_COPY_FAIL = buildCopyFail('the client went away');
const SETTLE_SYNC = buildSync();

export interface UpstreamTarget {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  /** TLS to the upstream (an external cluster's `sslmode=require` / `verify-full`). */
  tls?: { rejectUnauthorized: boolean } | undefined;
  /** Connection and login must be done within this long (`upstreamConnectTimeoutMs`); 10 s if unset. */
  connectTimeoutMs?: number | undefined;
  /** Settings every session of this target logs in with, under the caller's parameters (the user's timeouts; a wire client's own start-up values come first). */
  settings?: Readonly<Record<string, string>> | undefined;
}

export interface UpstreamSession {
  /** The role it logged in as. */
  readonly user: string;
  readonly socket: Socket;
  readonly reader: FrameReader;
  /** ParameterStatus values of the login, in arrival order (replayed to each client). */
  readonly parameters: ReadonlyMap<string, string>;
  readonly processId: number;
  readonly secretKey: number;
  readonly host: string;
  readonly port: number;
  status: TransactionStatus;
  /**
   * Set when a statement runs, cleared after one that ran cleanly and cannot change a setting
   * (the REST API, query-run.ts): the next user must reset the session's settings first.
   */
  needsReset: boolean;
  /**
   * The settings that decide how Postgres reads statement text (standard_conforming_strings,
   * client_encoding), as it last reported them (ParameterStatus).
   */
  readonly reading: Map<string, string>;
  /**
   * Whether one of them is no longer what it was at login: a function can change them with
   * `set_config`, out of the policy's sight, and Postgres may then read a statement's text
   * differently from the parser that checked it.
   */
  readingChanged: boolean;
  /**
   * Receives the socket's data: whoever holds the session points it at its own handler (and
   * back at `ignore` when done), so that handing a session from one holder to the next moves no
   * event listener. Holders may listen on the socket themselves instead, leaving it at `ignore`.
   * Called as the session's method.
   */
  sink: (this: UpstreamSession, chunk: Buffer) => void;
  /** Called once the socket has closed (same idea: the holder's own, or `ignore`). */
  onGone: () => void;
  /** Its hold of an admission slot while handed out (admission.ts). */
  readonly hold: Hold;
  /** Its pool's generation of its role's login settings when it logged in (session-pool.ts `renew`). */
  generation: number;
}

/** How a wait for a session ends: with the session, or with `err` and none. */
export type SessionDone = (err: unknown, session?: UpstreamSession) => void;

/** A sink or onGone that does nothing. */
export const ignore = (): void => undefined;

export { type CancelTarget } from './cancel-upstream.js';
export { cancelUpstream };

/** Settings Postgres reports (ParameterStatus) that change how it reads statement text. */
const READING_SETTINGS = ['standard_conforming_strings', 'client_encoding'];

/** Takes note of a ParameterStatus the server sent after login (a setting changed or was reset). */
export function noteParameterStatus(session: UpstreamSession, frame: Buffer): void {
  const { name, value } = decodeParameterStatus(frame);
  if (!session.reading.has(name)) return;
  session.reading.set(name, value);
  session.readingChanged = false;
  for (const [n, v] of session.reading) if (v !== session.parameters.get(n)) session.readingChanged = true;
}

function readingAtLogin(parameters: ReadonlyMap<string, string>): Map<string, string> {
  const reading = new Map<string, string>();
  for (const name of READING_SETTINGS) {
    const value = parameters.get(name);
    if (value !== undefined) reading.set(name, value);
  }
  return reading;
}

const CONNECT_TIMEOUT_MS = 10_000;
/** TCP keepalive probes on upstream sockets: a peer host that vanished is noticed even on an idle session. */
const KEEPALIVE_MS = 30_000;

/** Salted passwords are costly (PBKDF2); the role password and salt rarely change. */
const saltedCache = new Map<string, Buffer>();

function salted(password: string, salt: Buffer, iterations: number): Buffer {
  const key = `${iterations}:${salt.toString('base64')}:${hmac(Buffer.from('cache'), password).toString('base64')}`;
  let value = saltedCache.get(key);
  if (!value) {
    if (saltedCache.size > 10_000) saltedCache.clear();
    value = saltedPassword(password, salt, iterations);
    saltedCache.set(key, value);
  }
  return value;
}

function unavailable(target: UpstreamTarget, reason: string): PgError {
  return new PgError(SqlState.ConnectionFailure, `upstream Postgres unavailable: ${reason}`, {
    detail: `connecting to ${target.host}:${target.port} as role "${target.user}"`,
  });
}

/**
 * Opens a session: StartupMessage with `params`, SCRAM-SHA-256 (or cleartext/none, as the
 * server asks), then ParameterStatus and BackendKeyData up to the first ReadyForQuery.
 */
export async function openUpstreamSession(target: UpstreamTarget, params: Readonly<Record<string, string>>): Promise<UpstreamSession> {
  return login(await transport(target), target, params);
}

/** A TCP connection to the upstream, upgraded to TLS (SSLRequest first) when the target asks for it. */
function transport(target: UpstreamTarget): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const onread = target.tls ? undefined : DIRECT_READS; // socket-reads.ts
    const socket = connect({ host: target.host, port: target.port, noDelay: true, keepAlive: true, keepAliveInitialDelay: KEEPALIVE_MS, onread });
    const ms = target.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${ms} ms`)), ms);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(unavailable(target, err.message));
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      if (!target.tls) {
        clearTimeout(timer);
        socket.off('error', fail);
        trackQueued('upstream', socket);
        return resolve(socket);
      }
      socket.write(buildSslRequest());
      socket.once('data', (answer: Buffer) => {
        if (answer[0] !== 0x53 /* S */) return fail(new Error('the server does not accept TLS'));
        const secure = tlsConnect({ socket, servername: target.host, rejectUnauthorized: target.tls!.rejectUnauthorized });
        secure.once('error', fail);
        secure.once('secureConnect', () => {
          clearTimeout(timer);
          secure.off('error', fail);
          socket.off('error', fail);
          trackQueued('upstream', secure);
          resolve(secure);
        });
      });
    });
  });
}

/**
 * Logs in on a connection already made to `target` (TLS, if any, already in place): the
 * StartupMessage, authentication, and everything up to the first ReadyForQuery.
 */
export function login(socket: Socket, target: UpstreamTarget, params: Readonly<Record<string, string>>): Promise<UpstreamSession> {
  return new Promise((resolve, reject) => {
    const reader = new FrameReader({ source: 'backend' });
    const parameters = new Map<string, string>();
    let processId = 0;
    let secretKey = 0;
    let clientFirstBare = '';
    let clientNonce = '';
    let authMessage = '';
    let saltedPw: Buffer | undefined;
    let done = false;

    const fail = (err: PgError) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    const ms = target.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    const timer = setTimeout(() => fail(unavailable(target, `no answer to the login within ${ms} ms`)), ms);
    socket.on('error', (err) => fail(unavailable(target, err.message)));
    socket.on('close', () => fail(unavailable(target, 'the connection closed during login')));

    const onFrame = (code: number, frame: Buffer) => {
      switch (code) {
        case BackendCode.Authentication: {
          const auth = decodeAuthentication(frame);
          switch (auth.kind) {
            case 'ok':
              return;
            case 'cleartext_password':
              socket.write(buildPasswordMessage(target.password));
              return;
            case 'sasl': {
              if (!auth.mechanisms.includes('SCRAM-SHA-256')) throw unavailable(target, `unsupported SASL mechanisms ${auth.mechanisms.join(', ')}`);
              clientNonce = randomBytes(18).toString('base64');
              clientFirstBare = `n=,r=${clientNonce}`;
              socket.write(buildSaslInitialResponse('SCRAM-SHA-256', Buffer.from(`n,,${clientFirstBare}`)));
              return;
            }
            case 'sasl_continue': {
              const serverFirst = auth.data.toString('utf8');
              const attrs = scramAttributes(serverFirst);
              const nonce = attrs.get('r') ?? '';
              const salt = Buffer.from(attrs.get('s') ?? '', 'base64');
              const iterations = Number(attrs.get('i'));
              if (!nonce.startsWith(clientNonce) || !Number.isInteger(iterations) || iterations < 1) throw unavailable(target, 'invalid SCRAM server-first-message');
              const clientFinalWithoutProof = `c=biws,r=${nonce}`;
              authMessage = `${clientFirstBare},${serverFirst},${clientFinalWithoutProof}`;
              saltedPw = salted(target.password, salt, iterations);
              const proof = clientProof(saltedPw, authMessage).toString('base64');
              socket.write(buildSaslResponse(Buffer.from(`${clientFinalWithoutProof},p=${proof}`)));
              return;
            }
            case 'sasl_final': {
              const expected = serverSignature(hmac(saltedPw!, 'Server Key'), authMessage).toString('base64');
              if (scramAttributes(auth.data.toString('utf8')).get('v') !== expected) throw unavailable(target, 'the server failed SCRAM verification');
              return;
            }
            default:
              throw unavailable(target, `unsupported authentication request ${auth.kind}`);
          }
        }
        case BackendCode.ParameterStatus: {
          const p = decodeParameterStatus(frame);
          parameters.set(p.name, p.value);
          return;
        }
        case BackendCode.BackendKeyData: {
          const k = decodeBackendKeyData(frame);
          processId = k.processId;
          secretKey = k.secretKey;
          return;
        }
        case BackendCode.ErrorResponse:
          throw decodeErrorResponse(frame);
        case BackendCode.NoticeResponse:
        case BackendCode.NegotiateProtocolVersion:
          return;
        case BackendCode.ReadyForQuery: {
          done = true;
          clearTimeout(timer);
          socket.removeAllListeners('data');
          socket.removeAllListeners('close');
          socket.removeAllListeners('error');
          // Errors surface as 'close' to whoever holds the session; an unheard 'error' would crash the process.
          socket.on('error', () => undefined);
          const session: UpstreamSession = { user: target.user, socket, reader, parameters, processId, secretKey, host: target.host, port: target.port, status: decodeReadyForQuery(frame), needsReset: false, reading: readingAtLogin(parameters), readingChanged: false, sink: ignore, onGone: ignore, hold: newHold(processId), generation: 0 };
          socket.on('data', (chunk: Buffer) => session.sink(chunk));
          socket.on('close', () => session.onGone());
          resolve(session);
          return;
        }
        default:
          throw unavailable(target, `unexpected message ${String.fromCharCode(code)} during login`);
      }
    };

    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk, onFrame);
      } catch (err: unknown) {
        fail(err instanceof PgError ? err : unavailable(target, String(err)));
      }
    });
    socket.write(buildStartupMessage({ ...target.settings, ...params, user: target.user, database: target.database }));
  });
}

/**
 * Brings a session whose client left with work in flight back to idle, so that it can serve the
 * next client (after the reset every released session gets) instead of being closed: what runs is
 * cancelled, the `owed` answers (one ReadyForQuery each) are read and dropped, an extended-protocol
 * batch the client never ended (`unsynced`) gets its Sync, and a COPY from the client is failed.
 * Resolves true once the session is idle outside a transaction. False, with the socket closed,
 * if a transaction is left open (closing it is the rollback that leaves nothing behind, as for
 * any client leaving mid-transaction) or it does not get there within SETTLE_GRACE_MS.
 */
export function settle(session: UpstreamSession, owed: number, unsynced: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = session.socket;
    // Only once the cancel was delivered does the session take new work: a late one would hit it.
    const cancelled: Promise<unknown> = owed > 0 ? cancelUpstream(session) : Promise.resolve();
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      if (!ok) socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), SETTLE_GRACE_MS);
    const idle = () => void cancelled.then(() => done(!socket.destroyed && session.status === 'I'));
    const onFrame = (code: number, frame: Buffer) => {
      if (code === BackendCode.CopyInResponse) socket.write(SETTLE_COPY_FAIL);
      else if (code === BackendCode.ParameterStatus) noteParameterStatus(session, frame);
      else if (code === BackendCode.ReadyForQuery) {
        session.status = decodeReadyForQuery(frame);
        if (--owed === 0) idle();
      }
    };
    const onData = (chunk: Buffer) => {
      try {
        session.reader.push(chunk, onFrame);
      } catch {
        done(false);
      }
    };
    const onClose = () => done(false);
    socket.on('data', onData);
    socket.on('close', onClose);
    if (owed > 0) socket.write(SETTLE_COPY_FAIL); // ends a COPY FROM STDIN the client began; ignored by Postgres otherwise
    if (unsynced) {
      socket.write(SETTLE_SYNC);
      owed++;
    }
    socket.resume(); // a session paused for a slow client: Postgres checks for the cancel once it can send
    if (owed === 0) idle();
  });
}
