// Analysis + Rights + Session → Decision. This is the per-query work on a cache hit, so it only
// walks the cached facts: no parsing, no allocation beyond the result.
import { PgError, SqlState } from '../shared/errors.js';
import { checkCatalogPath } from './catalog-rewrite.js';
import { channelRefusal, channelSpans, channelSql } from './channels.js';
import type { Analysis, Refusal, SchemaCommand, StatementFacts } from './facts.js';
import { REPO_NAME_RULE, repoNameProblem, splitRepo } from './names.js';
import { refusals } from './refusals.js';
import { checkChannel, checkRef, checkSearchPath, noAccess, notARepo } from './resolve.js';
import { builtInPath } from './setting-free.js';
import { handledRefusal, keyRefusal } from './key-scope.js';
import type { Decision, Rights, Session, SessionChange, SessionEffect } from './types.js';

const postgresDefaultPath: readonly string[] = ['$user', 'public'];
const noChanges: readonly SessionChange[] = [];
const RESET: SessionChange = { kind: 'reset_search_path' };
const RESET_LOCAL: SessionChange = { kind: 'reset_search_path', local: true };
const COMMIT: SessionChange = { kind: 'transaction_end', commit: true };
const ROLLBACK: SessionChange = { kind: 'transaction_end', commit: false };
/** The changes of a COMMIT alone (most transactions end so): one array for all of them. */
const COMMIT_ONLY: readonly SessionChange[] = [COMMIT];

/**
 * Whether a statement's effects are state the front end must follow, which it does not when it
 * runs the statements ahead of a refused one: sequence state it follows only to answer currval.
 */
function heldEffects(effects: readonly SessionEffect[]): boolean {
  return effects.some((e) => e.kind !== 'sequence_write' && e.kind !== 'sequence');
}

/** Whether a change moves the search_path (a transaction's end only may). */
function changesPath(c: SessionChange): boolean {
  return c.kind !== 'transaction_end';
}

/** The PgError a refusal becomes. */
export function toError(r: Refusal): PgError {
  return new PgError(r.code, r.message, { hint: r.hint, detail: r.detail, position: r.position });
}

function deny(r: Refusal): Decision {
  return { kind: 'deny', error: toError(r) };
}

/** Decides an analysed query string for one principal and session. */
export function evaluate(analysis: Analysis, rights: Rights, session: Session): Decision {
  if (analysis.error !== null) return deny(analysis.error);
  const count = analysis.statements.length;
  let path = session.searchPath;
  /** The path without SET LOCAL: what a transaction's end returns to. */
  let sessionPath = path;
  let changes: SessionChange[] | undefined;
  for (const [i, facts] of analysis.statements.entries()) {
    if (facts.schema !== null && facts.refusal === null) {
      if (rights.key !== undefined) return deny(handledRefusal(rights, facts.command));
      return count > 1 ? deny(alone(facts)) : schemaCommand(facts.schema, rights);
    }
    const refusal = check(facts, rights, path);
    if (refusal !== null) {
      // The statements ahead may run first, as in Postgres, unless they changed the session
      // (the front end would not follow) or the seed rule rewrote the string.
      const ahead = facts.start > 0 && !changes?.some(changesPath) && analysis.rewrite === null && !analysis.effects?.slice(0, i).some(heldEffects);
      return ahead ? { kind: 'deny', error: toError(refusal), refusedAt: facts.start } : deny(refusal);
    }
    for (const setting of facts.settings) {
      switch (setting.kind) {
        case 'search_path':
          path = setting.value;
          if (setting.local === undefined) sessionPath = path;
          (changes ??= []).push(setting.local === undefined ? { kind: 'search_path', value: setting.value } : { kind: 'search_path', value: setting.value, local: true });
          break;
        case 'reset_search_path':
          path = session.defaultSearchPath ?? postgresDefaultPath;
          if (setting.local === undefined) sessionPath = path;
          (changes ??= []).push(setting.local === undefined ? RESET : RESET_LOCAL);
          break;
        case 'transaction_end':
          path = sessionPath;
          (changes ??= []).push(setting.commit ? COMMIT : ROLLBACK);
          break;
      }
    }
  }
  const done = changes === undefined ? noChanges : changes.length === 1 && changes[0] === COMMIT ? COMMIT_ONLY : changes;
  if (analysis.statements.some((s) => s.shareCommand !== null)) return shareDecision(analysis.statements, rights);
  const free = settingFree(analysis, path) ? ({ settingFree: true } as const) : undefined;
  const effects = analysis.effects === undefined ? {} : { effects: analysis.effects };
  if (analysis.channelText !== undefined) return channelDecision(analysis, analysis.channelText, rights.user, done);
  if (analysis.rewrite !== null) return { kind: 'rewrite', sql: analysis.rewrite.sql, edits: analysis.rewrite.edits, changes: done, statements: count, ...free, ...effects };
  return { kind: 'allow', changes: done, statements: count, ...free, ...effects };
}

/** Whether no statement of `analysis` can change a setting, its unqualified names resolved on `path`. */
function settingFree(analysis: Analysis, path: readonly string[]): boolean {
  return analysis.statements.length > 0 && analysis.statements.every((s) => s.settingFree) && builtInPath(path);
}

/** One statement against the rights, with the search path in force when it runs: its refusal, or null. */
function check(facts: StatementFacts, rights: Rights, path: readonly string[]): Refusal | null {
  if (facts.refusal !== null) return facts.refusal;
  if (facts.owners.some((owner) => owner !== rights.user)) return refusals.owner;
  for (const ref of facts.refs) {
    const refusal = checkRef(ref, rights, ref.path ?? path);
    if (refusal !== null) return refusal;
  }
  if (facts.catalog.length > 0 || path.includes('information_schema')) {
    const refusal = checkCatalogPath(facts, path);
    if (refusal !== null) return refusal;
  }
  for (const functionPath of facts.functionPaths) {
    const refusal = checkSearchPath(functionPath, rights);
    if (refusal !== null) return refusal;
  }
  for (const channel of facts.channels) {
    const refusal = checkChannel(channel, rights);
    if (refusal !== null) return refusal;
  }
  for (const span of facts.channelSpans) {
    const refusal = channelRefusal(rights.user, span.name);
    if (refusal !== null) return refusal;
  }
  for (const setting of facts.settings) {
    if (setting.kind !== 'search_path') continue;
    const refusal = checkSearchPath(setting.value, rights);
    if (refusal !== null) return refusal;
  }
  return rights.key === undefined ? null : keyRefusal(facts, rights);
}

/** GRANTs performed by the control plane as sharing: every statement of the string must be one. */
function shareDecision(statements: readonly StatementFacts[], rights: Rights): Decision {
  if (rights.key !== undefined) return deny(handledRefusal(rights, statements.find((s) => s.shareCommand !== null)?.shareCommand ?? 'GRANT'));
  const other = statements.find((s) => s.shareCommand === null);
  if (other !== undefined) {
    return deny({ code: SqlState.FeatureNotSupported, message: 'GRANT can be sent with other GRANTs only', hint: 'send it as a query of its own' });
  }
  const shares = statements.flatMap((s) => s.shares);
  // A grant to a scoped key's role (a restored pg_dump holds them): the control plane keeps the
  // caller's own keys' grants itself; another user's key is nobody to share with.
  if (shares.some((s) => s.grantee?.includes('#') === true && !s.grantee.startsWith(`${rights.user}#`))) return deny(refusals.grant('GRANT to a key of another user'));
  const grants = shares.flatMap(({ schema, grantee, level }) => {
    const repo = splitRepo(schema);
    return repo === undefined || grantee === rights.user || grantee?.includes('#') === true ? [] : [{ repo: repo.repo, grantee, level }];
  });
  if (grants.some((g) => g.grantee === null && g.level === 'write')) {
    return deny({ ...refusals.grant('GRANT of write privileges to PUBLIC'), hint: 'a public repo is readable by everyone; share write access with collaborators' });
  }
  return { kind: 'handled', action: { kind: 'share', owner: rights.user, grants }, commandTags: statements.map((s) => s.shareCommand ?? 'GRANT') };
}

function alone(facts: StatementFacts): Refusal {
  return {
    code: SqlState.FeatureNotSupported,
    message: `${facts.command} of a repo must be sent alone, not with other statements`,
    hint: `send the ${facts.command} statement as a query of its own`,
  };
}

// CREATE SCHEMA / DROP SCHEMA of a repo are performed by the control plane, which keeps its
// records and the role grants in step.
function schemaCommand(cmd: SchemaCommand, rights: Rights): Decision {
  const user = rights.user;
  if (cmd.kind === 'create') {
    const repo = splitRepo(cmd.name);
    if (repo === undefined) {
      return deny({ ...notARepo(cmd.name, user), message: `schema "${cmd.name}" is not a repo name: repos are named "${user}/<repo>"`, hint: `CREATE SCHEMA "${user}/${cmd.name}"` });
    }
    if (repo.owner !== user) {
      return deny({ code: SqlState.InsufficientPrivilege, message: `repos can only be created in your own namespace "${user}/…"`, hint: `CREATE SCHEMA "${user}/${repo.repo}"` });
    }
    const problem = repoNameProblem(repo.repo);
    if (problem !== undefined) return deny({ code: SqlState.InvalidName, message: `invalid repo name "${repo.repo}": ${problem}` });
    if (cmd.authRole !== null && cmd.authRole !== user) return deny(refusals.roleGames('CREATE SCHEMA … AUTHORIZATION another role'));
    return { kind: 'handled', action: { kind: 'create_repo', owner: user, repo: repo.repo, ifNotExists: cmd.ifNotExists }, commandTags: ['CREATE SCHEMA'] };
  }
  if (cmd.names.length !== 1) return deny(refusals.dropManyRepos);
  const name = cmd.names[0] ?? '';
  const repo = splitRepo(name);
  if (repo === undefined) return deny(notARepo(name, user));
  if (repo.owner !== user) {
    if (!rights.repos.has(name)) return deny(noAccess(name, repo.owner));
    return deny({ code: SqlState.InsufficientPrivilege, message: `only the owner of repo "${name}" can drop it`, hint: `${repo.owner} owns it` });
  }
  if (repoNameProblem(repo.repo) !== undefined) return deny({ code: SqlState.InvalidName, message: `invalid repo name "${repo.repo}": ${REPO_NAME_RULE}` });
  return { kind: 'handled', action: { kind: 'drop_repo', owner: user, repo: repo.repo, ifExists: cmd.ifExists, cascade: cmd.cascade }, commandTags: ['DROP SCHEMA'] };
}

/** LISTEN/NOTIFY/UNLISTEN with the user's channel names; `listens` says which a client listened to by the prefixed name. */
function channelDecision(analysis: Analysis, sql: string, user: string, changes: readonly SessionChange[]): Decision {
  const spans = channelSpans(analysis.statements) ?? [];
  const listens = spans.filter((s) => s.listen && s.name.startsWith(`${user}/`)).map((s) => s.name);
  const extra = { ...(listens.length > 0 ? { listens } : {}), ...(analysis.effects === undefined ? {} : { effects: analysis.effects }) };
  const out = channelSql(sql, user, spans.filter((s) => !s.name.startsWith(`${user}/`)));
  // `sql` is the analysis' rewrite when there is one (catalog reads redirected): the channels come on top.
  const before = analysis.rewrite?.edits ?? [];
  if (out.text === sql && analysis.rewrite === null) return { kind: 'allow', changes, statements: analysis.statements.length, ...extra };
  return { kind: 'rewrite', sql: out.text, edits: [...before, out.edits], changes, statements: analysis.statements.length, ...extra };
}
