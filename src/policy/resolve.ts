// Where a name lands and whether the principal may use it there.
//
// Unqualified relation names: Postgres takes the first schema on the search_path that has the
// table, and the policy cannot see tables. So an unqualified name is allowed only if EVERY
// schema it could land in allows the access: the session's temporary schema (searched first,
// always the user's own), pg_catalog (searched next unless listed explicitly; a name in its
// known relation list stops the search there, readable, never writable), then each schema on
// the path (`$user` is skipped: no schema is named after a user, repos are "<user>/<repo>").
// A name being created goes to the first schema on the path that exists, so every schema on the
// path must be the user's own (unless pg_temp is listed first: then it is created there).
// `public` is passed over: it holds nothing of anybody's, and nobody may create in it.
// Unqualified functions, types and operators are checked only when created or changed: a call
// resolves through pg_catalog first, and Postgres' role wall guards what it reaches.
import { SqlState } from '../shared/errors.js';
import { informationSchemaRelations, pgCatalogRelations } from './catalog.js';
import { citusRelationRefusal } from './citus.js';
import type { NameRef, Need, Refusal } from './facts.js';
import { isSystemSchema, isTempSchema, splitRepo } from './names.js';
import { outsideScope, readOnlyKey } from './key-scope.js';
import type { Rights, StorageUse } from './types.js';
import { formatSize } from '../shared/units.js';

const denied = SqlState.InsufficientPrivilege;

interface Where {
  command: string;
  position: number | null;
  /** The unqualified name that led here, for the detail line. */
  unqualified?: string;
}

function at(refusal: Refusal, where: Where, schema: string): Refusal {
  const out: Refusal = { ...refusal };
  if (where.position !== null) out.position = where.position;
  if (where.unqualified !== undefined) {
    out.detail = `"${where.unqualified}" is not schema-qualified, and schema "${schema}" is on your search_path`;
  }
  return out;
}

/** The refusal for a schema that is not a repo (public, or any name without a slash). */
export function notARepo(schema: string, user: string): Refusal {
  return {
    code: denied,
    message: `schema "${schema}" is not a repo: tables live in repos named "${user}/<repo>"`,
    hint: `create one with CREATE SCHEMA "${user}/myrepo", then use it: SET search_path = "${user}/myrepo"`,
  };
}

/** Same text for a private repo and a missing one: existence is not revealed. */
export function noAccess(schema: string, owner: string): Refusal {
  return {
    code: denied,
    message: `permission denied for repo "${schema}"`,
    hint: `ask ${owner} to add you as a collaborator, or use a repo of your own`,
  };
}

/** What a user over their storage quota may still run in their repos: what removes data. */
const SHRINKS = /^(DELETE|TRUNCATE|DROP\b|VACUUM)/;

/** A statement that would add to the data of `owner`, who keeps more than their storage quota. */
export function overQuota(schema: string, owner: string, full: StorageUse): Refusal {
  return {
    code: SqlState.DiskFull,
    message: `storage quota exceeded: ${owner} keeps ${formatSize(full.used)} in their repos, and ${formatSize(full.allowed)} is allowed (repo "${schema}")`,
    hint: 'reading goes on, and so do DELETE, TRUNCATE and DROP: free space with them, or ask the service\'s admin for a larger quota',
  };
}

/** Whether `need` is allowed on `schema`, or the refusal saying why not. */
export function checkSchema(schema: string, need: Need, rights: Rights, where: Where): Refusal | null {
  if (isSystemSchema(schema)) {
    if (need === 'read') return null;
    return at({ code: denied, message: `schema "${schema}" is read-only: system catalogs cannot be changed` }, where, schema);
  }
  if (isTempSchema(schema)) return null;
  const repo = splitRepo(schema);
  if (repo === undefined) return at(notARepo(schema, rights.user), where, schema);
  const access = rights.repos.get(schema);
  if (access === undefined) {
    // A scoped key says so for a repo its user reaches; for any other, the same words as for the user.
    if (rights.key?.reach.has(schema) === true) return at(outsideScope(schema, rights), where, schema);
    if (repo.owner !== rights.user) return at(noAccess(schema, repo.owner), where, schema);
    return at({ code: SqlState.InvalidSchemaName, message: `repo "${schema}" does not exist`, hint: `create it with CREATE SCHEMA "${schema}"` }, where, schema);
  }
  if (need === 'read') return null;
  if (access === 'own' || (need === 'write' && access === 'write')) {
    const full = rights.full?.get(repo.owner);
    return full === undefined || SHRINKS.test(where.command) ? null : at(overQuota(schema, repo.owner, full), where, schema);
  }
  if (access === 'read') {
    if (rights.key?.access === 'read' && rights.key.reach.get(schema) !== 'read') return at(readOnlyKey(schema, where.command, rights), where, schema);
    return at({ code: denied, message: `repo "${schema}" is read-only for you`, hint: `ask ${repo.owner} for write access` }, where, schema);
  }
  const hint = where.command === 'TRUNCATE'
    ? 'TRUNCATE needs ownership; DELETE FROM removes the rows'
    : `you can read and change rows in it (SELECT, INSERT, UPDATE, DELETE); ask ${repo.owner} to change its structure`;
  return at({ code: denied, message: `only the owner of repo "${schema}" can run ${where.command} in it`, hint }, where, schema);
}

/**
 * Whether an unqualified name may land in a schema of the path. `$user` names no schema (repos
 * are "<user>/<repo>"), and `public` holds nothing: CREATE on it is revoked from every user, so a
 * name is found earlier on the path or not at all, and one created lands in the next schema (or
 * Postgres refuses it). Frameworks put it on the path (`myschema, public`).
 */
function searched(schema: string): boolean {
  return schema !== '$user' && schema !== 'public';
}

function knownSystemRelation(schema: string, name: string): boolean {
  return (schema === 'pg_catalog' && pgCatalogRelations.has(name)) || (schema === 'information_schema' && informationSchemaRelations.has(name));
}

/** Whether one reference is allowed for `rights` with this search_path. */
export function checkRef(ref: NameRef, rights: Rights, path: readonly string[]): Refusal | null {
  const where: Where = { command: ref.command, position: ref.position };
  if (ref.kind === 'schema') return checkSchema(ref.schema ?? '', ref.need, rights, where);
  const citus = ref.kind === 'relation' && !ref.create ? citusRelationRefusal(ref.schema, ref.name) : undefined;
  if (citus) return where.position === null ? citus : { ...citus, position: where.position };
  if (ref.schema !== null) return ref.temp && isTempSchema(ref.schema) ? null : checkSchema(ref.schema, ref.need, rights, where);
  const viaPath: Where = { ...where, unqualified: ref.name };
  if (ref.create) {
    const targets = path.filter((s) => s !== '$user');
    if (ref.temp || targets.length === 0 || isTempSchema(targets[0] ?? '')) return null;
    for (const [i, schema] of targets.entries()) {
      // Nothing lands in public (Postgres refuses it): it ends the candidates, or, first, is the schema named.
      if (schema === 'public' && i > 0) return null;
      const refusal = isTempSchema(schema) ? null : checkSchema(schema, 'own', rights, viaPath);
      if (refusal !== null) return refusal;
    }
    return null;
  }
  const explicit = path.filter(searched);
  if (ref.kind === 'object') {
    if (ref.need === 'read') return null;
    for (const schema of explicit) {
      const refusal = isTempSchema(schema) || isSystemSchema(schema) ? null : checkSchema(schema, ref.need, rights, viaPath);
      if (refusal !== null) return refusal;
    }
    return null;
  }
  const effective = explicit.includes('pg_catalog') ? explicit : ['pg_catalog', ...explicit];
  for (const schema of effective) {
    if (isTempSchema(schema)) continue;
    if (knownSystemRelation(schema, ref.name)) return checkSchema(schema, ref.need, rights, viaPath);
    if (isSystemSchema(schema)) continue;
    const refusal = checkSchema(schema, ref.need, rights, viaPath);
    if (refusal !== null) return refusal;
  }
  return null;
}

/**
 * SET search_path may name readable repos, the user's own namespace (a repo about to be created),
 * the system schemas, `$user` and `public` (the default path). Anything else is refused: a path
 * through schemas the user cannot read could re-resolve a prepared statement's names there.
 */
export function checkSearchPath(entries: readonly string[], rights: Rights): Refusal | null {
  for (const schema of entries) {
    if (schema === '$user' || schema === 'public' || isSystemSchema(schema) || isTempSchema(schema)) continue;
    const repo = splitRepo(schema);
    if (repo === undefined) return notARepo(schema, rights.user);
    // A scoped key creates no repo: its own namespace is no exception.
    if ((repo.owner !== rights.user || rights.key !== undefined) && !rights.repos.has(schema)) {
      return rights.key !== undefined && repo.owner === rights.user ? outsideScope(schema, rights) : noAccess(schema, repo.owner);
    }
  }
  return null;
}

/** LISTEN/NOTIFY channels are server-wide, so each user's are named "<user>/…". */
export function checkChannel(channel: string, rights: Rights): Refusal | null {
  if (channel.startsWith(`${rights.user}/`)) return null;
  return {
    code: denied,
    message: `channel "${channel}" is not yours: LISTEN/NOTIFY channels are shared by the whole server`,
    hint: `name your channels "${rights.user}/…", e.g. LISTEN "${rights.user}/updates"`,
  };
}
