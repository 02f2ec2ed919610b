/**
 * Each service user logs in upstream as its own Postgres role, with a password derived from the
 * server secret: never stored, the same on every instance that shares the secret.
 */
import { createHmac } from 'node:crypto';
import { postgresScramSecret, scramVerifier } from '../shared/scram.js';

/** The upstream login password of `role`. */
export function rolePassword(secret: string, role: string): string {
  return createHmac('sha256', secret).update(`role-password:${role}`).digest('base64url');
}

/** The SCRAM secret to put in `CREATE/ALTER ROLE … PASSWORD '…'`: Postgres stores it as given. */
export function rolePasswordVerifier(secret: string, role: string): string {
  return postgresScramSecret(scramVerifier(rolePassword(secret, role)));
}

/** A fingerprint of the secret, stored to notice when the secret changed (then passwords are reset). */
export function secretFingerprint(secret: string): string {
  return createHmac('sha256', secret).update('fingerprint').digest('hex').slice(0, 16);
}

/**
 * The user a role belongs to: itself for a user's own role, `alice` for a scoped key's role
 * `alice#0123456789ab` (`#` is in no user name). A key's backends count against its user's limits.
 */
export function tenantOf(role: string): string {
  const hash = role.indexOf('#');
  return hash < 0 ? role : role.slice(0, hash);
}
