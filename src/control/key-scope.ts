/**
 * What an API key may reach (DESIGN.md §10): a name, the repos (`null`: every repo its user may
 * reach, now and later), the access (`full` as every key was before, `read`, `write`) and an
 * expiry. The rules of a request for a new key, and the words every front end uses when a key's
 * scope refuses something.
 */
import { PgError, SqlState } from '../shared/errors.js';
import { parseRepoRef } from './names.js';
import { keyLabel } from '../shared/key-words.js';

export type KeyAccess = 'full' | 'read' | 'write';

/** What a key is, as the front ends and the policy see it (never its secret). */
export interface KeyMeta {
  name: string;
  access: KeyAccess;
  /** Repos (`alice/sales`) it may reach; null: every repo its user may reach. */
  repos: readonly string[] | null;
  expiresAt: Date | null;
}

/** A request for a new key: every field optional (an empty one is a full key, as before). */
export interface KeyRequest {
  name?: string | undefined;
  repos?: readonly string[] | null | undefined;
  access?: KeyAccess | undefined;
  expiresAt?: Date | null | undefined;
}

/** Longest key name, in characters. */
export const KEY_NAME_MAX_CHARS = 100;
/** Most repos one key may list. */
export const KEY_REPOS_MAX = 100;

/** Whether a key is scoped: not `full` (its sessions run as a role of their own). */
export function isScoped(meta: KeyMeta | undefined): meta is KeyMeta & { access: 'read' | 'write' } {
  return meta !== undefined && meta.access !== 'full';
}

/** The key a request describes, its fields checked (22023 / 42602 for bad input, nothing stored). */
export function keyFromRequest(req: KeyRequest, now = new Date()): KeyMeta {
  const name = req.name ?? '';
  if ([...name].length > KEY_NAME_MAX_CHARS || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new PgError(SqlState.InvalidParameterValue, `a key name has at most ${KEY_NAME_MAX_CHARS} characters and no control characters`);
  }
  const repos = req.repos === undefined || req.repos === null ? null : [...new Set(req.repos)];
  const access = req.access ?? (repos === null ? 'full' : 'read');
  if (access === 'full' && repos !== null) {
    throw new PgError(SqlState.InvalidParameterValue, 'a full key reaches every repo: leave "repos" out, or choose "access": "read" or "write"');
  }
  if (repos !== null) {
    if (repos.length === 0) throw new PgError(SqlState.InvalidParameterValue, '"repos" lists no repo: name at least one, or leave it out for every repo');
    if (repos.length > KEY_REPOS_MAX) throw new PgError(SqlState.InvalidParameterValue, `a key lists at most ${KEY_REPOS_MAX} repos`);
    for (const repo of repos) parseRepoRef(repo);
  }
  const expiresAt = req.expiresAt ?? null;
  if (expiresAt !== null && (Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() <= now.getTime())) {
    throw new PgError(SqlState.InvalidParameterValue, `expires_at must be a time in the future${Number.isNaN(expiresAt.getTime()) ? '' : `, not ${expiresAt.toISOString()}`}`);
  }
  return { name, access, repos, expiresAt };
}

/** 28P01/28000 for a key used after its expiry, saying when. */
export function expiredKey(id: string, meta: KeyMeta, code: string = SqlState.InvalidPassword): PgError {
  return new PgError(code, `${keyLabel(id, meta.name)} expired at ${meta.expiresAt?.toISOString() ?? '?'}`, {
    hint: 'create a new key (POST /api/v1beta/keys/ or `repobase key create`)',
  });
}

/** The 42501 of a request a scoped key may never make (keys, repos, sharing, the console). */
export function notWithScopedKey(id: string, meta: KeyMeta, what: string): PgError {
  return new PgError(SqlState.InsufficientPrivilege, `${what} needs a full API key: ${keyLabel(id, meta.name)} has ${meta.access} access to ${meta.repos === null ? 'the repos of its user' : meta.repos.join(', ')}`, {
    hint: 'use a full key (one made without "repos" and "access"), or the console',
  });
}
