/**
 * Client authentication on the wire: the password is an API key of the user named in the
 * startup packet.
 *
 * SCRAM-SHA-256: every user has one salt and iteration count shared by all its keys, and each key
 * has its own verifier (StoredKey, ServerKey) computed when the key was made. The server sends
 * the user's salt before it knows which key the client holds, then checks the client's proof
 * against each live key's StoredKey; the first that matches is the key used. No key, and no
 * hash that could be replayed as one, ever crosses the wire.
 *
 * Cleartext: the key itself, only over TLS (or on loopback when configured), checked like a
 * REST bearer key.
 */
import { randomBytes } from 'node:crypto';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import { principalOf } from '../control/key-store.js';
import { keyOfPrincipal } from '../control/audit.js';
import { expiredKey } from '../control/key-scope.js';
import { PgError, SqlState } from '../shared/errors.js';
import { hmac, proofMatches, scramAttributes, serverSignature, SCRAM_ITERATIONS } from '../shared/scram.js';
import {
  FrontendCode,
  buildAuthenticationCleartextPassword,
  buildAuthenticationOk,
  buildAuthenticationSasl,
  buildAuthenticationSaslContinue,
  buildAuthenticationSaslFinal,
  decodePassword,
  type PasswordPhase,
} from '../protocol/index.js';
import type { FrameQueue } from './frame-queue.js';
import type { FailureThrottle } from '../shared/throttle.js';
import { authFailed as authFailures } from '../observe/metrics.js';

// Re-exported for the connection handler, which types its dependencies from this module.
export type { FailureThrottle };

export interface AuthOptions {
  control: ControlPlane;
  method: 'scram-sha-256' | 'password';
  /** Server secret: derives a stable fake salt for unknown users, so they look like real ones. */
  secret: string;
  throttle: FailureThrottle;
  /** The connection's id in the audit log. */
  connId?: string;
}

export function authFailed(user: string): PgError {
  return new PgError(SqlState.InvalidPassword, `password authentication failed for user "${user}"`, {
    severity: 'FATAL',
    hint: 'the password is an API key of this user (repobase key create <user>, or POST /api/v1beta/keys/)',
  });
}

async function readPassword(queue: FrameQueue, phase: PasswordPhase) {
  const { code, frame } = await queue.next();
  if (code !== FrontendCode.Password) {
    throw new PgError(SqlState.ProtocolViolation, `expected a password message, got message type "${String.fromCharCode(code)}"`, { severity: 'FATAL' });
  }
  return decodePassword(frame, phase);
}

async function scram(queue: FrameQueue, write: (b: Buffer) => void, user: string, opts: AuthOptions): Promise<Principal> {
  write(buildAuthenticationSasl(['SCRAM-SHA-256']));
  const first = await readPassword(queue, 'sasl_initial');
  if (first.kind !== 'sasl_initial_response' || first.mechanism !== 'SCRAM-SHA-256' || !first.data) {
    throw new PgError(SqlState.ProtocolViolation, 'client selected an invalid SASL authentication mechanism', { severity: 'FATAL' });
  }
  const clientFirst = first.data.toString('utf8');
  const gs2 = /^([ny]),[^,]*,/.exec(clientFirst);
  if (!gs2) {
    throw new PgError(SqlState.ProtocolViolation, 'malformed SCRAM message: channel binding is not offered here', { severity: 'FATAL' });
  }
  const clientFirstBare = clientFirst.slice(gs2[0].length);
  const clientNonce = scramAttributes(clientFirstBare).get('r');
  if (!clientNonce) throw new PgError(SqlState.ProtocolViolation, 'malformed SCRAM message: no nonce', { severity: 'FATAL' });

  const creds = (await opts.control.keys.scramCredentials(user)) ?? {
    salt: hmac(Buffer.from(opts.secret), `fake-salt:${user}`).subarray(0, 16),
    iterations: SCRAM_ITERATIONS,
    keys: [],
  };
  const nonce = clientNonce + randomBytes(18).toString('base64');
  const serverFirst = `r=${nonce},s=${creds.salt.toString('base64')},i=${creds.iterations}`;
  write(buildAuthenticationSaslContinue(Buffer.from(serverFirst)));

  const final = await readPassword(queue, 'sasl');
  if (final.kind !== 'sasl_response') throw authFailed(user);
  const clientFinal = final.data.toString('utf8');
  const proofAt = clientFinal.lastIndexOf(',p=');
  const attrs = scramAttributes(clientFinal);
  if (proofAt < 0 || attrs.get('r') !== nonce || attrs.get('c') !== Buffer.from(gs2[0]).toString('base64')) {
    throw new PgError(SqlState.ProtocolViolation, 'malformed SCRAM message: nonce or channel binding mismatch', { severity: 'FATAL' });
  }
  const authMessage = `${clientFirstBare},${serverFirst},${clientFinal.slice(0, proofAt)}`;
  const proof = Buffer.from(clientFinal.slice(proofAt + 3), 'base64');
  const key = creds.keys.find((k) => proofMatches(k.storedKey, authMessage, proof));
  if (!key) throw authFailed(user);
  if (key.meta.expiresAt !== null && key.meta.expiresAt.getTime() <= Date.now()) throw expiredLogin(key.id, key.meta);
  write(buildAuthenticationSaslFinal(Buffer.from(`v=${serverSignature(key.serverKey, authMessage).toString('base64')}`)));
  opts.control.keys.recordUse(key.id);
  return principalOf(key.id, user, key.meta);
}

/** The FATAL 28P01 of a key that was right but expired: the client is told when. */
function expiredLogin(id: string, meta: Parameters<typeof expiredKey>[1]): PgError {
  const e = expiredKey(id, meta);
  return new PgError(SqlState.InvalidPassword, e.message, { severity: 'FATAL', hint: e.hint });
}

async function cleartext(queue: FrameQueue, write: (b: Buffer) => void, user: string, opts: AuthOptions): Promise<Principal> {
  write(buildAuthenticationCleartextPassword());
  const msg = await readPassword(queue, 'password');
  if (msg.kind !== 'password') throw authFailed(user);
  try {
    const principal = await opts.control.keys.authenticate(msg.password);
    if (principal.user === user) return principal;
  } catch (err: unknown) {
    // An expired key of this very user is told so (as over SCRAM); anything else is a failed log-in.
    if (err instanceof PgError && err.code === SqlState.InvalidAuthorizationSpecification && msg.password.startsWith('rb_')) {
      const meta = (await opts.control.keys.scramCredentials(user))?.keys.find((k) => msg.password.startsWith(`rb_${k.id}_`))?.meta;
      if (meta) throw expiredLogin(msg.password.slice(3, 15), meta);
    }
    if (!(err instanceof PgError) || (err.code !== SqlState.InvalidPassword && err.code !== SqlState.InvalidAuthorizationSpecification)) throw err;
  }
  throw authFailed(user);
}

/**
 * Runs the password exchange for `user`; resolves to the principal after AuthenticationOk was
 * written, or rejects with a FATAL PgError (28P01 after a delay that grows with the failures of
 * this source address).
 */
export async function authenticateClient(
  queue: FrameQueue,
  write: (b: Buffer) => void,
  user: string,
  address: string,
  opts: AuthOptions,
): Promise<Principal> {
  try {
    const principal = opts.method === 'scram-sha-256' ? await scram(queue, write, user, opts) : await cleartext(queue, write, user, opts);
    write(buildAuthenticationOk());
    opts.throttle.succeeded(address);
    opts.control.audit.record({ action: 'login', user, frontEnd: 'wire', source: address, requestId: opts.connId ?? null, ...keyOfPrincipal(principal) });
    return principal;
  } catch (err: unknown) {
    if (err instanceof PgError && err.code === SqlState.InvalidPassword) opts.control.audit.record({ action: 'login_failed', user, frontEnd: 'wire', source: address, requestId: opts.connId ?? null });
    if (err instanceof PgError && err.code === SqlState.InvalidPassword) {
      authFailures.wire.value++;
      await opts.throttle.failed(address);
    }
    throw err;
  }
}
