/** Users: a control-plane row and a Postgres LOGIN role of the same name (DESIGN.md §1). */
import { randomBytes } from 'node:crypto';
import { escapeIdentifier, escapeLiteral } from 'pg';
import { PgError, SqlState } from '../shared/errors.js';
import { SCRAM_ITERATIONS } from '../shared/scram.js';
import { rolePasswordVerifier } from '../upstream/roles.js';
import { query, type Queryable } from './db.js';
import { notify } from './events.js';
import { CONTROL_SCHEMA } from './migrations.js';
import { assertUserName } from './names.js';
import { dropRepoSchema } from './repos.js';
import { allKeyRoles, dropKeyRole, keyRolesOf } from './key-roles.js';

const ROLE_OPTIONS = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT';

export interface UserInfo {
  name: string;
  createdAt: Date;
  repos: number;
  keys: number;
}

async function adminIsSuperuser(db: Queryable): Promise<boolean> {
  const res = await query<{ rolsuper: boolean }>(db, 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  return res.rows[0]?.rolsuper === true;
}

/** Creates user `name` (row, role, first API key) inside the caller's transaction. */
export async function insertUser(db: Queryable, name: string, secret: string): Promise<void> {
  const admin = await query<{ current_user: string }>(db, 'SELECT current_user');
  assertUserName(name, admin.rows[0]?.current_user);
  const exists = await query(db, `SELECT 1 FROM ${CONTROL_SCHEMA}.users WHERE name = $1`, [name]);
  if (exists.rowCount) throw new PgError(SqlState.DuplicateObject, `user "${name}" already exists`);
  const role = await query(db, 'SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
  if (role.rowCount) {
    throw new PgError(SqlState.DuplicateObject, `a Postgres role named "${name}" already exists in the upstream cluster`, {
      hint: 'choose another user name',
    });
  }
  await query(db, `INSERT INTO ${CONTROL_SCHEMA}.users (name, scram_salt, scram_iterations) VALUES ($1, $2, $3)`, [
    name,
    randomBytes(16),
    SCRAM_ITERATIONS,
  ]);
  // The password is sent as a SCRAM verifier: the plain text never reaches a statement log.
  await query(db, `CREATE ROLE ${escapeIdentifier(name)} ${ROLE_OPTIONS} PASSWORD ${escapeLiteral(rolePasswordVerifier(secret, name))}`);
  // A CREATEROLE (non-superuser) admin must be a member to create schemas owned by the role.
  if (!(await adminIsSuperuser(db))) await query(db, `GRANT ${escapeIdentifier(name)} TO CURRENT_USER`);
}

export async function listUsers(db: Queryable): Promise<UserInfo[]> {
  const res = await query<{ name: string; created_at: Date; repos: string; keys: string }>(
    db,
    `SELECT u.name, u.created_at,
            (SELECT count(*) FROM ${CONTROL_SCHEMA}.repos r WHERE r.owner = u.name) AS repos,
            (SELECT count(*) FROM ${CONTROL_SCHEMA}.api_keys k WHERE k.user_name = u.name AND k.revoked_at IS NULL) AS keys
       FROM ${CONTROL_SCHEMA}.users u ORDER BY u.name`,
  );
  return res.rows.map((r) => ({ name: r.name, createdAt: r.created_at, repos: Number(r.repos), keys: Number(r.keys) }));
}

/** Deletes user `name`: its repos (schemas and data), keys, grants and role, in the caller's transaction. */
export async function deleteUser(db: Queryable, name: string): Promise<void> {
  const found = await query(db, `SELECT 1 FROM ${CONTROL_SCHEMA}.users WHERE name = $1 FOR UPDATE`, [name]);
  if (!found.rowCount) throw new PgError(SqlState.UndefinedObject, `user "${name}" does not exist`);
  // Its scoped keys' roles first: what they might own goes to the user's role, dropped below.
  for (const role of await keyRolesOf(db, name)) {
    await query(db, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
    await dropKeyRole(db, role);
  }
  const repos = await query<{ name: string }>(db, `SELECT name FROM ${CONTROL_SCHEMA}.repos WHERE owner = $1`, [name]);
  for (const r of repos.rows) await dropRepoSchema(db, { owner: name, repo: r.name });
  await query(db, `DELETE FROM ${CONTROL_SCHEMA}.users WHERE name = $1`, [name]);
  await query(db, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [name]);
  // Drops what the role still owns here and every privilege granted to it.
  await query(db, `DROP OWNED BY ${escapeIdentifier(name)}`);
  await query(db, `DROP ROLE ${escapeIdentifier(name)}`);
  await notify(db, { kind: 'user', name });
  await notify(db, { kind: 'rights' });
}

/** Resets every user role's (and scoped key role's) password when the server secret changed since the last start. */
export async function syncRolePasswords(db: Queryable, secret: string, fingerprint: string): Promise<number> {
  const stored = await query<{ value: string }>(db, `SELECT value FROM ${CONTROL_SCHEMA}.settings WHERE key = 'secret_fingerprint' FOR UPDATE`);
  if (stored.rows[0]?.value === fingerprint) return 0;
  const users = await query<{ name: string }>(db, `SELECT name FROM ${CONTROL_SCHEMA}.users`);
  const roles = [...users.rows.map((u) => u.name), ...(await allKeyRoles(db))];
  for (const role of roles) {
    await query(db, `ALTER ROLE ${escapeIdentifier(role)} PASSWORD ${escapeLiteral(rolePasswordVerifier(secret, role))}`);
  }
  await query(
    db,
    `INSERT INTO ${CONTROL_SCHEMA}.settings (key, value) VALUES ('secret_fingerprint', $1)
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    [fingerprint],
  );
  return roles.length;
}
