/** Rules for user and repo names (DESIGN.md §1), shared by the control plane, the CLI and the API. */
import { PgError, SqlState } from '../shared/errors.js';

export const USER_NAME_RULE = 'a user name is 2–39 characters: a lowercase letter, then lowercase letters, digits or _';
export const REPO_NAME_RULE = 'a repo name is 1–100 characters: letters, digits, _, - and .';

const userPattern = /^[a-z][a-z0-9_]{1,38}$/;
const repoPattern = /^[A-Za-z0-9_.-]{1,100}$/;

/** Role names a service user may never take: Postgres' own, and the service's. */
const reserved = new Set(['postgres', 'public', 'none', 'current_user', 'session_user', 'current_role', 'user', 'all', 'repobase', 'admin', 'root', 'api', 'system']);

/** Returns the reason `name` is not a valid user name, or undefined. */
export function userNameProblem(name: string, adminRole?: string): string | undefined {
  if (!userPattern.test(name)) return USER_NAME_RULE;
  if (reserved.has(name) || name.startsWith('pg_') || name === adminRole) return `"${name}" is reserved`;
  return undefined;
}

export function assertUserName(name: string, adminRole?: string): void {
  const problem = userNameProblem(name, adminRole);
  if (problem) throw new PgError(SqlState.InvalidName, `invalid user name "${name}": ${problem}`);
}

export function repoNameProblem(name: string): string | undefined {
  if (!repoPattern.test(name) || name === '.' || name === '..') return REPO_NAME_RULE;
  return undefined;
}

export function assertRepoName(name: string): void {
  const problem = repoNameProblem(name);
  if (problem) throw new PgError(SqlState.InvalidName, `invalid repo name "${name}": ${problem}`);
}

export interface RepoRef {
  owner: string;
  repo: string;
}

/** `alice/sales` → {owner, repo}; the schema name of a repo is exactly this text. */
export function parseRepoRef(text: string): RepoRef {
  const slash = text.indexOf('/');
  if (slash < 0) {
    throw new PgError(SqlState.InvalidName, `invalid repo "${text}": expected <user>/<repo>`);
  }
  const ref = { owner: text.slice(0, slash), repo: text.slice(slash + 1) };
  assertUserName(ref.owner);
  assertRepoName(ref.repo);
  return ref;
}

export function schemaName(ref: RepoRef): string {
  return `${ref.owner}/${ref.repo}`;
}
