/**
 * SCRAM-SHA-256 primitives (RFC 5802 / RFC 7677), shared by the wire front end (verifying a
 * client's proof against each stored key verifier) and the upstream layer (giving Postgres a
 * pre-hashed role password, so no plain password ever appears in a statement or a server log).
 *
 * @see https://www.postgresql.org/docs/current/sasl-authentication.html
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

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
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
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
