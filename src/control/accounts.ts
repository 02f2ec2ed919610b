/**
 * People in the web console: a password per user (optional: API-key-only users have none) and
 * log-in sessions (DESIGN.md §5).
 *
 * Passwords are stored as `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`, so the cost can be raised
 * later without invalidating existing hashes. A session id is 32 random bytes sent only in the
 * cookie; the table keeps its SHA-256 (the id has 256 bits of entropy, so a slow hash adds
 * nothing), so a copy of the table cannot be used as cookies. Sessions are never cached: a
 * log-out or a deleted user takes effect on every instance with the next request.
 */
import { hash, randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { PgError, SqlState } from '../shared/errors.js';
import { query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';

/** Fewest characters a password may have (the API's Credentials schema says the same). */
export const PASSWORD_MIN_CHARS = 10;
/** Most characters: scrypt reads all of it, so an unbounded one would be free work for a caller. */
export const PASSWORD_MAX_CHARS = 1024;
/** A session ends this long after its last renewal. */
export const SESSION_LIFETIME_MS = 14 * 24 * 3600_000;
/**
 * A session is renewed when less than this remains: at most one UPDATE per session per day,
 * however many requests it makes.
 */
const RENEW_BELOW_MS = 13 * 24 * 3600_000;

const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keylen: 32, saltBytes: 16 } as const;
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

/** A live session as the HTTP front end sees it. */
export interface WebSession {
  user: string;
  /** Sent back by the console in `X-CSRF-Token` on every change. */
  csrfToken: string;
  expiresAt: Date;
  /** Stable, non-secret name of the session for logs and rate limits: `session:<12 hex>`. */
  label: string;
  /** True when this lookup extended the session (the cookie should be sent again). */
  renewed: boolean;
}

/** A session just created: `id` goes into the cookie and is never stored. */
export interface NewWebSession extends WebSession {
  id: string;
}

function scrypt(password: string, salt: Buffer, params: { N: number; r: number; p: number }, keylen: number): Promise<Buffer> {
  // 128·N·r bytes of memory; Node's default cap (32 MiB) is exactly N=2^15, r=8, so allow twice that.
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) => scryptCallback(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** Refuses a password the API would refuse, whatever path it came by (API, CLI). */
export function assertPassword(password: string): void {
  const chars = [...password].length;
  if (chars < PASSWORD_MIN_CHARS || chars > PASSWORD_MAX_CHARS) {
    throw new PgError(SqlState.InvalidParameterValue, `a password has ${PASSWORD_MIN_CHARS} to ${PASSWORD_MAX_CHARS} characters`);
  }
}

/** The stored form of `password`, with a fresh salt. Slow on purpose (~50–100 ms). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SCRYPT.saltBytes);
  const key = await scrypt(password, salt, SCRYPT, SCRYPT.keylen);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), key.toString('base64')].join('$');
}

let dummyHash: Promise<string> | undefined;

/** Whether `password` matches the stored hash; a missing or unreadable hash costs the same and fails. */
async function passwordMatches(stored: string | null | undefined, password: string): Promise<boolean> {
  const parts = (stored ?? '').split('$');
  const [scheme, n, r, p, salt, key] = parts;
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  const readable = parts.length === 6 && scheme === 'scrypt' && salt && key && Number.isInteger(params.N) && Number.isInteger(params.r) && Number.isInteger(params.p);
  if (!readable) {
    // Unknown user, or one without a password: spend a real hash's time so neither shows.
    dummyHash ??= hashPassword('no password is stored for this user');
    await passwordMatches(await dummyHash, password);
    return false;
  }
  const expected = Buffer.from(key, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), params, expected.length);
  return timingSafeEqual(actual, expected);
}

/** Stores a password hash for `user` and ends all their sessions (a reset must lock out whoever had the old one). */
export async function setPassword(db: Queryable, user: string, passwordHash: string): Promise<void> {
  const res = await query(db, `UPDATE ${CONTROL_SCHEMA}.users SET password_hash = $2 WHERE name = $1`, [user, passwordHash]);
  if (!res.rowCount) throw new PgError(SqlState.UndefinedObject, `user "${user}" does not exist`);
  await query(db, `DELETE FROM ${CONTROL_SCHEMA}.web_sessions WHERE user_name = $1`, [user]);
}

/** Whether `password` is `user`'s; false for an unknown user or one without a password, after the same work. */
export async function checkPassword(db: Queryable, user: string, password: string): Promise<boolean> {
  const res = await query<{ password_hash: string | null }>(db, `SELECT password_hash FROM ${CONTROL_SCHEMA}.users WHERE name = $1`, [user]);
  return passwordMatches(res.rows[0]?.password_hash, password);
}

/** The one answer to a failed log-in: the same for an unknown user and a wrong password. */
export function invalidCredentials(): PgError {
  return new PgError(SqlState.InvalidPassword, 'invalid user name or password');
}

const idHash = (id: string): Buffer => hash('sha256', id, 'buffer');
const labelOf = (digest: Buffer): string => `session:${digest.toString('hex').slice(0, 12)}`;

/** Starts a session for `user`; also drops expired sessions, so the table does not only grow. */
export async function createSession(db: Queryable, user: string): Promise<NewWebSession> {
  const id = randomBytes(32).toString('base64url');
  const digest = idHash(id);
  const csrfToken = randomBytes(32).toString('base64url');
  await query(db, `DELETE FROM ${CONTROL_SCHEMA}.web_sessions WHERE expires_at < now()`);
  const res = await query<{ expires_at: Date }>(
    db,
    `INSERT INTO ${CONTROL_SCHEMA}.web_sessions (id_hash, user_name, csrf_token, expires_at)
     VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond') RETURNING expires_at`,
    [digest, user, csrfToken, SESSION_LIFETIME_MS],
  );
  return { id, user, csrfToken, expiresAt: res.rows[0]!.expires_at, label: labelOf(digest), renewed: false };
}

/** The live session with cookie id `id`, or undefined (unknown, malformed, ended or expired). */
export async function loadSession(db: Queryable, id: string): Promise<WebSession | undefined> {
  if (!SESSION_ID.test(id)) return undefined;
  const digest = idHash(id);
  const res = await query<{ user_name: string; csrf_token: string; expires_at: Date }>(
    db,
    `SELECT user_name, csrf_token, expires_at FROM ${CONTROL_SCHEMA}.web_sessions WHERE id_hash = $1 AND expires_at > now()`,
    [digest],
  );
  const row = res.rows[0];
  return row && { user: row.user_name, csrfToken: row.csrf_token, expiresAt: row.expires_at, label: labelOf(digest), renewed: false };
}

/** Whether `session` is due for renewal (sliding expiry without a write per request). */
export function needsRenewal(session: WebSession, now = Date.now()): boolean {
  return session.expiresAt.getTime() - now < RENEW_BELOW_MS;
}

/** Extends session `id` to the full lifetime from now; the new expiry, or undefined if it ended meanwhile. */
export async function touchSession(db: Queryable, id: string): Promise<Date | undefined> {
  const res = await query<{ expires_at: Date }>(
    db,
    `UPDATE ${CONTROL_SCHEMA}.web_sessions SET expires_at = now() + $2 * interval '1 millisecond'
      WHERE id_hash = $1 AND expires_at > now() RETURNING expires_at`,
    [idHash(id), SESSION_LIFETIME_MS],
  );
  return res.rows[0]?.expires_at;
}

/** Ends session `id`; ending one that does not exist is not an error (log-out is idempotent). */
export async function deleteSession(db: Queryable, id: string): Promise<void> {
  if (!SESSION_ID.test(id)) return;
  await query(db, `DELETE FROM ${CONTROL_SCHEMA}.web_sessions WHERE id_hash = $1`, [idHash(id)]);
}
