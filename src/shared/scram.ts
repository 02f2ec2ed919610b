/**
 * SCRAM-SHA-256 primitives (RFC 5802 / RFC 7677), shared by the wire front end (verifying a
 * client's proof against each stored key verifier) and the upstream layer (giving Postgres a
 * pre-hashed role password, so no plain password ever appears in a statement or a server log).
 *
 * @see https://www.postgresql.org/docs/current/sasl-authentication.html
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

export const SCRAM_ITERATIONS = 4096;

export interface ScramVerifier {
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

export function hmac(key: Buffer, data: string | Buffer): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

export function sha256(data: Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

/** Derives the stored verifier of `password` for `salt` and `iterations`. */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): ScramVerifier {
  // Postgres applies SASLprep; our passwords are ASCII (API keys, derived role passwords).
  const salted = saltedPassword(password, salt, iterations);
  return {
    salt,
    iterations,
    storedKey: sha256(hmac(salted, 'Client Key')),
    serverKey: hmac(salted, 'Server Key'),
  };
}

/** The text Postgres stores in `pg_authid.rolpassword` and accepts in `CREATE ROLE … PASSWORD`. */
export function postgresScramSecret(v: ScramVerifier): string {
  return `SCRAM-SHA-256$${v.iterations}:${v.salt.toString('base64')}$${v.storedKey.toString('base64')}:${v.serverKey.toString('base64')}`;
}

/** XOR of two equal-length buffers. */
function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

/** Parses `a=1,b=2` SCRAM attribute lists (values may contain `=`). */
export function scramAttributes(text: string): Map<string, string> {
  const attrs = new Map<string, string>();
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq === 1) attrs.set(part[0]!, part.slice(2));
  }
  return attrs;
}

/** The client proof for `authMessage`, from the salted password (client side). */
export function clientProof(saltedPassword: Buffer, authMessage: string): Buffer {
  const clientKey = hmac(saltedPassword, 'Client Key');
  return xor(clientKey, hmac(sha256(clientKey), authMessage));
}

/** Whether `proof` was made with the password behind `storedKey` (server side, constant time). */
export function proofMatches(storedKey: Buffer, authMessage: string, proof: Buffer): boolean {
  if (proof.length !== storedKey.length) return false;
  const clientKey = xor(proof, hmac(storedKey, authMessage));
  return timingSafeEqual(sha256(clientKey), storedKey);
}

export function serverSignature(serverKey: Buffer, authMessage: string): Buffer {
  return hmac(serverKey, authMessage);
}

export function saltedPassword(password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(password, salt, iterations, 32, 'sha256');
}
