/**
 * API keys: `rb_<id>_<secret>`. The id is public (shown in listings, used to revoke); the secret
 * is 32 random bytes. Stored: SHA-256 of the secret (the secret has 256 bits of entropy, so a
 * slow hash adds nothing) and a SCRAM verifier of the whole key under the user's salt, so the
 * wire front end can check a SCRAM proof without ever seeing the key.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { PgError, SqlState } from '../shared/errors.js';
import { scramVerifier } from '../shared/scram.js';
import { query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';
import { notify } from './events.js';
import type { KeyAccess, KeyMeta } from './key-scope.js';

const KEY_PATTERN = /^rb_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;

/** Who a request or a session acts for. */
export interface Principal {
  user: string;
  /** The key's public id; for the console's session cookie, the session's label. */
  keyId: string;
  /** The Postgres role its statements run as: the user's own, or a scoped key's (key-roles.ts). */
  role: string;
  /** The key it came with (absent for a console session). */
  key?: KeyMeta;
}

export interface KeyInfo extends KeyMeta {
  id: string;
  prefix: string;
  user: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export interface NewKey extends KeyMeta {
  id: string;
  /** The whole key; shown once, never stored. */
  key: string;
  createdAt: Date;
}

/** The columns of a key's scope, and the row they come from. */
const META_COLUMNS = 'name, repos, access, expires_at';
interface MetaRow {
  name: string;
  repos: string[] | null;
  access: KeyAccess;
  expires_at: Date | null;
}
const metaOf = (r: MetaRow): KeyMeta => ({ name: r.name, repos: r.repos, access: r.access, expiresAt: r.expires_at });

export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

/** `rb_<id>_<secret>` → parts, or undefined when it is not shaped like a key. */
export function parseKey(key: string): { id: string; secret: string } | undefined {
  const m = KEY_PATTERN.exec(key);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

export function keyPrefix(id: string): string {
  return `rb_${id}`;
}

/** Creates a key for `user` inside the caller's transaction (a full one by default; the role of a scoped one is the caller's business). */
export async function insertKey(db: Queryable, user: string, meta: KeyMeta = { name: '', repos: null, access: 'full', expiresAt: null }): Promise<NewKey> {
  const salt = await query<{ scram_salt: Buffer; scram_iterations: number }>(
    db,
    `SELECT scram_salt, scram_iterations FROM ${CONTROL_SCHEMA}.users WHERE name = $1`,
    [user],
  );
  const row = salt.rows[0];
  if (!row) throw new PgError(SqlState.UndefinedObject, `user "${user}" does not exist`);
  const id = randomBytes(6).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const key = `rb_${id}_${secret}`;
  const v = scramVerifier(key, row.scram_salt, row.scram_iterations);
  const made = await query<{ created_at: Date }>(
    db,
    `INSERT INTO ${CONTROL_SCHEMA}.api_keys (id, user_name, secret_hash, scram_stored_key, scram_server_key, name, repos, access, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING created_at`,
    [id, user, hashSecret(secret), v.storedKey, v.serverKey, meta.name, meta.repos, meta.access, meta.expiresAt],
  );
  await notify(db, { kind: 'key', id });
  return { id, key, ...meta, createdAt: made.rows[0]!.created_at };
}

/** Every key of `user` that was not revoked, expired ones included (marked by their expiry). */
export async function listKeys(db: Queryable, user: string): Promise<KeyInfo[]> {
  const res = await query<MetaRow & { id: string; user_name: string; created_at: Date; last_used_at: Date | null }>(
    db,
    `SELECT id, user_name, created_at, last_used_at, ${META_COLUMNS} FROM ${CONTROL_SCHEMA}.api_keys
      WHERE user_name = $1 AND revoked_at IS NULL ORDER BY created_at, id`,
    [user],
  );
  return res.rows.map((r) => ({ id: r.id, prefix: keyPrefix(r.id), user: r.user_name, createdAt: r.created_at, lastUsedAt: r.last_used_at, ...metaOf(r) }));
}

/** Revokes a key; with `user`, only a key of that user. Returns its owner and its access. */
export async function revokeKey(db: Queryable, id: string, user?: string): Promise<{ user: string; access: KeyAccess }> {
  const res = await query<{ user_name: string; access: KeyAccess }>(
    db,
    `UPDATE ${CONTROL_SCHEMA}.api_keys SET revoked_at = now()
      WHERE id = $1 AND revoked_at IS NULL AND ($2::text IS NULL OR user_name = $2) RETURNING user_name, access`,
    [id, user ?? null],
  );
  const row = res.rows[0];
  if (!row) throw new PgError(SqlState.UndefinedObject, `no active API key with id "${id}"`);
  await notify(db, { kind: 'key', id });
  return { user: row.user_name, access: row.access };
}

export interface StoredKey {
  user: string;
  secretHash: Buffer;
  meta: KeyMeta;
}

/** A key that was not revoked (it may have expired: the caller says so). */
export async function loadKey(db: Queryable, id: string): Promise<StoredKey | undefined> {
  const res = await query<MetaRow & { user_name: string; secret_hash: Buffer }>(
    db,
    `SELECT user_name, secret_hash, ${META_COLUMNS} FROM ${CONTROL_SCHEMA}.api_keys WHERE id = $1 AND revoked_at IS NULL`,
    [id],
  );
  const row = res.rows[0];
  return row && { user: row.user_name, secretHash: row.secret_hash, meta: metaOf(row) };
}

const dummyHash = hashSecret('no such key');

/** Constant-time check of `secret` against a stored key (or a dummy, so misses take as long). */
export function secretMatches(stored: StoredKey | undefined, secret: string): boolean {
  const ok = timingSafeEqual(hashSecret(secret), stored?.secretHash ?? dummyHash);
  return ok && stored !== undefined;
}

export function invalidKey(): PgError {
  return new PgError(SqlState.InvalidPassword, 'invalid API key', {
    hint: 'use a key from `repobase key create <user>` or POST /api/v1beta/keys/; keys look like rb_<id>_<secret>',
  });
}

/**
 * What the wire front end needs to check a SCRAM proof: the user's salt and each key's verifier,
 * with the key's scope (an expired key still matches, so that the client is told it expired).
 */
export interface ScramCredentials {
  salt: Buffer;
  iterations: number;
  keys: { id: string; storedKey: Buffer; serverKey: Buffer; meta: KeyMeta }[];
}

export async function loadScramCredentials(db: Queryable, user: string): Promise<ScramCredentials | undefined> {
  const res = await query<Partial<MetaRow> & { scram_salt: Buffer; scram_iterations: number; id: string | null; scram_stored_key: Buffer | null; scram_server_key: Buffer | null }>(
    db,
    `SELECT u.scram_salt, u.scram_iterations, k.id, k.scram_stored_key, k.scram_server_key, k.name, k.repos, k.access, k.expires_at
       FROM ${CONTROL_SCHEMA}.users u
       LEFT JOIN ${CONTROL_SCHEMA}.api_keys k ON k.user_name = u.name AND k.revoked_at IS NULL
      WHERE u.name = $1`,
    [user],
  );
  const first = res.rows[0];
  if (!first) return undefined;
  return {
    salt: first.scram_salt,
    iterations: first.scram_iterations,
    keys: res.rows.flatMap((r) =>
      r.id && r.scram_stored_key && r.scram_server_key ? [{ id: r.id, storedKey: r.scram_stored_key, serverKey: r.scram_server_key, meta: metaOf(r as MetaRow) }] : [],
    ),
  };
}
