/**
 * The Postgres role of a scoped key (DESIGN.md §10, docs/wire.md "Scoped keys in Postgres"): the
 * second wall. Each key that is not `full` has a LOGIN role `<user>#<key id>` — a name no user
 * can have — with the same derived password as a user's role, that holds exactly the privileges
 * of the key's scope and is a member of no role:
 *
 * - a `read` key: USAGE on each repo and SELECT on its tables (present and future), and
 *   `default_transaction_read_only` on, so that even a function that writes (a user's SECURITY
 *   DEFINER one included) fails in Postgres;
 * - a `write` key: what its user may do there — SELECT, INSERT, UPDATE, DELETE and the sequences
 *   on a collaborator's repo; on the user's own repos also TRUNCATE, REFERENCES, TRIGGER and
 *   CREATE on the schema, when the service's event triggers let it change structure without
 *   owning anything (key-triggers.ts).
 *
 * Public repos other than the listed ones are read through PUBLIC, like any user reads them. The
 * grants follow the user's own: a repo shared, unshared or created later is granted or revoked
 * for the user's keys in the same transaction (`syncRepoForKeys`). A revoked key's role is dropped
 * (its backends are then terminated), an expired one's first refused (VALID UNTIL) and dropped by
 * the sweep.
 */
import { escapeIdentifier, escapeLiteral } from 'pg';
import { rolePasswordVerifier, tenantOf } from '../upstream/roles.js';
import { query, type Queryable } from './db.js';
import type { KeyMeta } from './key-scope.js';
import { CONTROL_SCHEMA } from './migrations.js';
import type { RepoAccess } from './repos.js';

/** The owner of repo `schema` (`alice` of `alice/sales`). */
const ownerOf = (schema: string): string | undefined => (schema.indexOf('/') > 0 ? schema.slice(0, schema.indexOf('/')) : undefined);

const ROLE_OPTIONS = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT';

/** The Postgres role of scoped key `id` of `user`: `#` is in no user name, so it is nobody's. */
export function keyRoleName(user: string, id: string): string {
  return `${user}#${id}`;
}


/** What a key role gets on one repo: reads, the writes of a collaborator, or those and the structure of an owner. */
export type KeyLevel = RepoAccess;

/**
 * The repos a key's role is granted and at which level: the listed ones (or, for `null`, every
 * repo its user reaches but through PUBLIC alone), at the key's access capped by the user's.
 */
export function grantedScope(meta: Pick<KeyMeta, 'access' | 'repos'>, reach: ReadonlyMap<string, RepoAccess>, publicOnly: ReadonlySet<string>): Map<string, KeyLevel> {
  const out = new Map<string, KeyLevel>();
  for (const [schema, access] of reach) {
    const listed = meta.repos === null ? !publicOnly.has(schema) : meta.repos.includes(schema);
    if (listed) out.set(schema, meta.access === 'read' ? 'read' : access);
  }
  return out;
}

async function adminIsSuperuser(db: Queryable): Promise<boolean> {
  const res = await query<{ rolsuper: boolean }>(db, 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  return res.rows[0]?.rolsuper === true;
}

/** Creates the role of a scoped key with the grants of its scope (caller's transaction). */
export async function createKeyRole(
  db: Queryable,
  secret: string,
  role: string,
  meta: KeyMeta,
  scope: ReadonlyMap<string, KeyLevel>,
  ddl: boolean,
): Promise<void> {
  const r = escapeIdentifier(role);
  const until = meta.expiresAt ? ` VALID UNTIL ${escapeLiteral(meta.expiresAt.toISOString())}` : '';
  await query(db, `CREATE ROLE ${r} ${ROLE_OPTIONS} PASSWORD ${escapeLiteral(rolePasswordVerifier(secret, role))}${until}`);
  if (meta.access === 'read') await query(db, `ALTER ROLE ${r} SET default_transaction_read_only = on`);
  // A CREATEROLE (non-superuser) admin needs the membership to grant, reassign and drop for it.
  if (!(await adminIsSuperuser(db))) await query(db, `GRANT ${r} TO CURRENT_USER`);
  for (const [schema, level] of scope) await grantRepo(db, role, schema, level, ddl);
}

/** Grants `role` what `level` means on one repo, on everything present and to come. */
export async function grantRepo(db: Queryable, role: string, schema: string, level: KeyLevel, ddl: boolean): Promise<void> {
  const owner = ownerOf(schema);
  if (owner === undefined) return;
  const s = escapeIdentifier(schema);
  const r = escapeIdentifier(role);
  const defaults = `ALTER DEFAULT PRIVILEGES FOR ROLE ${escapeIdentifier(owner)} IN SCHEMA ${s} GRANT`;
  const tables = level === 'read' ? 'SELECT' : level === 'write' ? 'SELECT, INSERT, UPDATE, DELETE' : 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER';
  await query(db, `GRANT USAGE ON SCHEMA ${s} TO ${r}`);
  await query(db, `GRANT ${tables} ON ALL TABLES IN SCHEMA ${s} TO ${r}`);
  await query(db, `${defaults} ${tables} ON TABLES TO ${r}`);
  if (level !== 'read') {
    await query(db, `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${s} TO ${r}`);
    await query(db, `${defaults} USAGE, SELECT, UPDATE ON SEQUENCES TO ${r}`);
  }
  if (level === 'own' && ddl) await query(db, `GRANT CREATE ON SCHEMA ${s} TO ${r}`);
}

/** Takes back everything `grantRepo` may have given `role` on one repo. */
export async function revokeRepo(db: Queryable, role: string, schema: string): Promise<void> {
  const owner = ownerOf(schema);
  if (owner === undefined) return;
  const s = escapeIdentifier(schema);
  const r = escapeIdentifier(role);
  const defaults = `ALTER DEFAULT PRIVILEGES FOR ROLE ${escapeIdentifier(owner)} IN SCHEMA ${s} REVOKE ALL`;
  await query(db, `${defaults} ON TABLES FROM ${r}`);
  await query(db, `${defaults} ON SEQUENCES FROM ${r}`);
  await query(db, `REVOKE ALL ON ALL TABLES IN SCHEMA ${s} FROM ${r}`);
  await query(db, `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${s} FROM ${r}`);
  await query(db, `REVOKE ALL ON SCHEMA ${s} FROM ${r}`);
}

/**
 * After `user`'s access to repo `schema` changed (now `access`, or none): the same change for the
 * roles of the user's live scoped keys that reach it (listed, or every repo), in the caller's
 * transaction. A repo reached only through PUBLIC (`viaPublic`) is granted to listing keys alone.
 */
export async function syncRepoForKeys(db: Queryable, user: string, schema: string, access: RepoAccess | undefined, ddl: boolean, viaPublic = false): Promise<void> {
  const keys = await query<{ id: string; access: 'read' | 'write'; listed: boolean }>(
    db,
    `SELECT id, access, repos IS NOT NULL AS listed FROM ${CONTROL_SCHEMA}.api_keys
      WHERE user_name = $1 AND revoked_at IS NULL AND access <> 'full' AND (repos IS NULL OR $2 = ANY (repos))
        AND EXISTS (SELECT FROM pg_roles WHERE rolname = user_name || '#' || id)`,
    [user, schema],
  );
  for (const k of keys.rows) {
    const role = keyRoleName(user, k.id);
    await revokeRepo(db, role, schema);
    if (access !== undefined && (k.listed || !viaPublic)) await grantRepo(db, role, schema, k.access === 'read' ? 'read' : access, ddl);
  }
}

/**
 * Drops a key's role: what it may own goes to its user first (it owns nothing between
 * statements), then its privileges. Returns its oid (to terminate its backends once the caller
 * commits), or undefined when there is no such role (a full key, or dropped already).
 */
export async function dropKeyRole(db: Queryable, role: string): Promise<number | undefined> {
  const found = await query<{ oid: number }>(db, 'SELECT oid::int AS oid FROM pg_roles WHERE rolname = $1', [role]);
  const oid = found.rows[0]?.oid;
  if (oid === undefined) return undefined;
  const r = escapeIdentifier(role);
  await query(db, `ALTER ROLE ${r} NOLOGIN`);
  await query(db, `REASSIGN OWNED BY ${r} TO ${escapeIdentifier(tenantOf(role))}`);
  await query(db, `DROP OWNED BY ${r}`);
  await query(db, `DROP ROLE ${r}`);
  return oid;
}

/** Ends every backend of a role that was dropped (by its oid: a dropped role has no name). */
export async function terminateRoleBackends(db: Queryable, oid: number): Promise<void> {
  await query(db, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usesysid = $1', [oid]);
}

/** The roles of every scoped key of `user`, for deleting the user (caller's transaction). */
export async function keyRolesOf(db: Queryable, user: string): Promise<string[]> {
  const res = await query<{ rolname: string }>(
    db,
    `SELECT k.user_name || '#' || k.id AS rolname FROM ${CONTROL_SCHEMA}.api_keys k
      WHERE k.user_name = $1 AND k.access <> 'full' AND EXISTS (SELECT FROM pg_roles r WHERE r.rolname = k.user_name || '#' || k.id)`,
    [user],
  );
  return res.rows.map((r) => r.rolname);
}

/** The role names of every live scoped key (the server secret changed: their passwords too). */
export async function allKeyRoles(db: Queryable): Promise<string[]> {
  const res = await query<{ rolname: string }>(
    db,
    `SELECT r.rolname FROM ${CONTROL_SCHEMA}.api_keys k JOIN pg_roles r ON r.rolname = k.user_name || '#' || k.id WHERE k.access <> 'full'`,
  );
  return res.rows.map((r) => r.rolname);
}
