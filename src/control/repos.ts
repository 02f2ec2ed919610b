/**
 * Repos: a control-plane row and a schema `"<owner>/<repo>"` owned by the owner's role. Sharing
 * is Postgres privileges, so the role wall enforces exactly what the control plane says.
 */
import { escapeIdentifier } from 'pg';
import { PgError, SqlState } from '../shared/errors.js';
import { query, type Queryable } from './db.js';
import { notify } from './events.js';
import { CONTROL_SCHEMA } from './migrations.js';
import { assertRepoName, schemaName, type RepoRef } from './names.js';

export type Permission = 'read' | 'write';

export interface RepoInfo {
  name: string;
  owner: string;
  repo: string;
  isPrivate: boolean;
  description: string;
  createdAt: Date;
}

export interface Collaborator {
  user: string;
  permission: Permission;
}

interface RepoRow {
  owner: string;
  name: string;
  is_private: boolean;
  description: string;
  created_at: Date;
}

const toInfo = (r: RepoRow): RepoInfo => ({
  name: `${r.owner}/${r.name}`,
  owner: r.owner,
  repo: r.name,
  isPrivate: r.is_private,
  description: r.description,
  createdAt: r.created_at,
});

const REPO_COLUMNS = 'owner, name, is_private, description, created_at';

function notFound(ref: RepoRef): PgError {
  return new PgError(SqlState.InvalidSchemaName, `repo "${schemaName(ref)}" does not exist`);
}

/** Grantee SQL: a user's role, or PUBLIC (every role: what "public repo" means). */
const grantee = (user: string | 'PUBLIC') => (user === 'PUBLIC' ? 'PUBLIC' : escapeIdentifier(user));

/** Grants `permission` on every table, present and future, of the repo. */
async function grant(db: Queryable, ref: RepoRef, to: string | 'PUBLIC', permission: Permission): Promise<void> {
  const s = escapeIdentifier(schemaName(ref));
  const g = grantee(to);
  const owner = escapeIdentifier(ref.owner);
  const tables = permission === 'write' ? 'SELECT, INSERT, UPDATE, DELETE' : 'SELECT';
  await query(db, `GRANT USAGE ON SCHEMA ${s} TO ${g}`);
  await query(db, `GRANT ${tables} ON ALL TABLES IN SCHEMA ${s} TO ${g}`);
  await query(db, `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA ${s} GRANT ${tables} ON TABLES TO ${g}`);
  if (permission === 'write') {
    // Inserting into a serial/identity column needs its sequence.
    await query(db, `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${s} TO ${g}`);
    await query(db, `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA ${s} GRANT USAGE, SELECT ON SEQUENCES TO ${g}`);
  }
}

/** Takes back everything `grant` may have given. */
async function revoke(db: Queryable, ref: RepoRef, from: string | 'PUBLIC'): Promise<void> {
  const s = escapeIdentifier(schemaName(ref));
  const g = grantee(from);
  const owner = escapeIdentifier(ref.owner);
  await query(db, `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA ${s} REVOKE ALL ON TABLES FROM ${g}`);
  await query(db, `ALTER DEFAULT PRIVILEGES FOR ROLE ${owner} IN SCHEMA ${s} REVOKE ALL ON SEQUENCES FROM ${g}`);
  await query(db, `REVOKE ALL ON ALL TABLES IN SCHEMA ${s} FROM ${g}`);
  await query(db, `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${s} FROM ${g}`);
  await query(db, `REVOKE ALL ON SCHEMA ${s} FROM ${g}`);
}

export async function insertRepo(db: Queryable, ref: RepoRef, opts: { isPrivate: boolean; description: string }): Promise<RepoInfo> {
  assertRepoName(ref.repo);
  const user = await query(db, `SELECT 1 FROM ${CONTROL_SCHEMA}.users WHERE name = $1`, [ref.owner]);
  if (!user.rowCount) throw new PgError(SqlState.UndefinedObject, `user "${ref.owner}" does not exist`);
  const exists = await query(db, 'SELECT 1 FROM pg_namespace WHERE nspname = $1', [schemaName(ref)]);
  const row = await query<RepoRow>(
    db,
    `INSERT INTO ${CONTROL_SCHEMA}.repos (owner, name, is_private, description) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING ${REPO_COLUMNS}`,
    [ref.owner, ref.repo, opts.isPrivate, opts.description],
  );
  if (!row.rows[0] || exists.rowCount) {
    throw new PgError(SqlState.DuplicateSchema, `repo "${schemaName(ref)}" already exists`);
  }
  await query(db, `CREATE SCHEMA ${escapeIdentifier(schemaName(ref))} AUTHORIZATION ${escapeIdentifier(ref.owner)}`);
  if (!opts.isPrivate) await grant(db, ref, 'PUBLIC', 'read');
  await notify(db, { kind: 'rights' });
  return toInfo(row.rows[0]);
}

export async function getRepo(db: Queryable, ref: RepoRef): Promise<RepoInfo | undefined> {
  const res = await query<RepoRow>(db, `SELECT ${REPO_COLUMNS} FROM ${CONTROL_SCHEMA}.repos WHERE owner = $1 AND name = $2`, [ref.owner, ref.repo]);
  return res.rows[0] && toInfo(res.rows[0]);
}

/** The repos `user` owns. */
export async function listRepos(db: Queryable, user: string): Promise<RepoInfo[]> {
  const res = await query<RepoRow>(db, `SELECT ${REPO_COLUMNS} FROM ${CONTROL_SCHEMA}.repos WHERE owner = $1 ORDER BY name`, [user]);
  return res.rows.map(toInfo);
}

/** Drops the schema of a repo with everything in it (caller's transaction). */
export async function dropRepoSchema(db: Queryable, ref: RepoRef): Promise<void> {
  await query(db, `DROP SCHEMA IF EXISTS ${escapeIdentifier(schemaName(ref))} CASCADE`);
}

export async function deleteRepo(db: Queryable, ref: RepoRef): Promise<void> {
  const res = await query(db, `DELETE FROM ${CONTROL_SCHEMA}.repos WHERE owner = $1 AND name = $2`, [ref.owner, ref.repo]);
  if (!res.rowCount) throw notFound(ref);
  await dropRepoSchema(db, ref);
  await notify(db, { kind: 'rights' });
}

export async function updateRepo(db: Queryable, ref: RepoRef, change: { isPrivate?: boolean | undefined; description?: string | undefined }): Promise<RepoInfo> {
  const before = await query<RepoRow>(db, `SELECT ${REPO_COLUMNS} FROM ${CONTROL_SCHEMA}.repos WHERE owner = $1 AND name = $2 FOR UPDATE`, [ref.owner, ref.repo]);
  const old = before.rows[0];
  if (!old) throw notFound(ref);
  const res = await query<RepoRow>(
    db,
    `UPDATE ${CONTROL_SCHEMA}.repos SET is_private = coalesce($3, is_private), description = coalesce($4, description)
      WHERE owner = $1 AND name = $2 RETURNING ${REPO_COLUMNS}`,
    [ref.owner, ref.repo, change.isPrivate ?? null, change.description ?? null],
  );
  const now = res.rows[0]!;
  if (old.is_private !== now.is_private) {
    if (now.is_private) await revoke(db, ref, 'PUBLIC');
    else await grant(db, ref, 'PUBLIC', 'read');
    await notify(db, { kind: 'rights' });
  }
  return toInfo(now);
}

/**
 * Locks the repo's row until the caller's transaction ends, or throws 404. Changes of one repo's
 * grants take turns: two at once (two collaborators added together) update the same catalog rows
 * (the schema's ACL, the owner's default privileges in it) and deadlock or fail in Postgres.
 */
async function lockRepo(db: Queryable, ref: RepoRef): Promise<void> {
  const res = await query(db, `SELECT 1 FROM ${CONTROL_SCHEMA}.repos WHERE owner = $1 AND name = $2 FOR UPDATE`, [ref.owner, ref.repo]);
  if (!res.rowCount) throw notFound(ref);
}

export async function setCollaborator(db: Queryable, ref: RepoRef, user: string, permission: Permission): Promise<void> {
  await lockRepo(db, ref);
  if (user === ref.owner) throw new PgError(SqlState.InvalidParameterValue, `"${user}" owns repo "${schemaName(ref)}" already`);
  const found = await query(db, `SELECT 1 FROM ${CONTROL_SCHEMA}.users WHERE name = $1`, [user]);
  if (!found.rowCount) throw new PgError(SqlState.UndefinedObject, `user "${user}" does not exist`);
  await query(
    db,
    `INSERT INTO ${CONTROL_SCHEMA}.collaborators (owner, repo, user_name, permission) VALUES ($1, $2, $3, $4)
     ON CONFLICT (owner, repo, user_name) DO UPDATE SET permission = EXCLUDED.permission`,
    [ref.owner, ref.repo, user, permission],
  );
  await revoke(db, ref, user);
  await grant(db, ref, user, permission);
  await notify(db, { kind: 'rights' });
}

export async function removeCollaborator(db: Queryable, ref: RepoRef, user: string): Promise<void> {
  await lockRepo(db, ref);
  const res = await query(db, `DELETE FROM ${CONTROL_SCHEMA}.collaborators WHERE owner = $1 AND repo = $2 AND user_name = $3`, [ref.owner, ref.repo, user]);
  if (!res.rowCount) throw new PgError(SqlState.UndefinedObject, `"${user}" is not a collaborator on repo "${schemaName(ref)}"`);
  await revoke(db, ref, user);
  await notify(db, { kind: 'rights' });
}

export async function listCollaborators(db: Queryable, ref: RepoRef): Promise<Collaborator[]> {
  const res = await query<{ user_name: string; permission: Permission }>(
    db,
    `SELECT user_name, permission FROM ${CONTROL_SCHEMA}.collaborators WHERE owner = $1 AND repo = $2 ORDER BY user_name`,
    [ref.owner, ref.repo],
  );
  return res.rows.map((r) => ({ user: r.user_name, permission: r.permission }));
}

export type RepoAccess = 'own' | 'write' | 'read';

const rank: Record<RepoAccess, number> = { read: 1, write: 2, own: 3 };

/**
 * Every repo `user` can reach, with the strongest access it has there, and those it reaches only
 * because they are public (not its own, not shared with it).
 */
export async function reachableRepos(db: Queryable, user: string): Promise<{ repos: Map<string, RepoAccess>; publicOnly: Set<string> }> {
  const res = await query<{ schema: string; access: RepoAccess; public: boolean }>(
    db,
    `SELECT owner || '/' || name AS schema, 'own' AS access, false AS public FROM ${CONTROL_SCHEMA}.repos WHERE owner = $1
     UNION ALL
     SELECT owner || '/' || repo, permission, false FROM ${CONTROL_SCHEMA}.collaborators WHERE user_name = $1
     UNION ALL
     SELECT owner || '/' || name, 'read', true FROM ${CONTROL_SCHEMA}.repos WHERE NOT is_private AND owner <> $1`,
    [user],
  );
  const repos = new Map<string, RepoAccess>();
  const shared = new Set<string>();
  const open = new Set<string>();
  for (const r of res.rows) {
    const had = repos.get(r.schema);
    if (!had || rank[r.access] > rank[had]) repos.set(r.schema, r.access);
    (r.public ? open : shared).add(r.schema);
  }
  for (const schema of shared) open.delete(schema);
  return { repos, publicOnly: open };
}

/**
 * The repos other users shared with `user` (as a collaborator), with the permission given.
 * Public repos the user was not invited to are not "shared with" them and are not listed.
 */
export async function listSharedRepos(db: Queryable, user: string): Promise<{ info: RepoInfo; permission: Permission }[]> {
  const res = await query<{ owner: string; name: string; is_private: boolean; description: string; created_at: Date; permission: Permission }>(
    db,
    `SELECT r.owner, r.name, r.is_private, r.description, r.created_at, c.permission
       FROM ${CONTROL_SCHEMA}.collaborators c
       JOIN ${CONTROL_SCHEMA}.repos r ON r.owner = c.owner AND r.name = c.repo
      WHERE c.user_name = $1
      ORDER BY r.owner, r.name`,
    [user],
  );
  return res.rows.map((r) => ({
    info: { name: `${r.owner}/${r.name}`, owner: r.owner, repo: r.name, isPrivate: r.is_private, description: r.description, createdAt: r.created_at },
    permission: r.permission,
  }));
}
