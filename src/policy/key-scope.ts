// Scoped API keys (DESIGN.md §10): what a key that is not `full` may not do. `Rights.repos` is
// already cut to the key's scope, so a repo outside it fails the usual checks (resolve.ts), which
// then name the key as the reason (`outsideScope`, `readOnlyKey`). This module adds the rest:
//
// - a `read` key runs reads only: statements outside READ_STATEMENTS, any reference that writes,
//   functions that are not built-ins (it cannot be told whether they write), the built-ins that
//   write (nextval, setval, pg_notify), and anything that would make its transaction read-write
//   (its role has default_transaction_read_only on: Postgres refuses the rest);
// - a `write` key changes rows and the structure of its user's repos in its scope, but creates no
//   code (functions, procedures, aggregates, operators, casts), no repo, shares nothing, runs no
//   maintenance (VACUUM, ANALYZE, CLUSTER), and its DDL uses functions and types of its own repos
//   and the system only (key-triggers.ts checks the same in Postgres);
// - no scoped key creates, drops or shares repos (`handled` statements), or uses large objects,
//   which belong to a user, not to a repo.
//
// And the lend comment: a write key's DDL names the objects Postgres should lend its role for the
// command (key-triggers.ts), resolved here as far as the policy can (a name on the search path
// may land in any of its own repos: each is listed).
import { SqlState } from '../shared/errors.js';
import { keyLabel, scopeWords, WIDER_KEY_HINT } from '../shared/key-words.js';
import type { NameRef, Refusal, StatementFacts } from './facts.js';
import { isSystemSchema, isTempSchema } from './names.js';
import type { KeyRights, Rights } from './types.js';

const denied = SqlState.InsufficientPrivilege;

/** How the comment a write key's DDL starts with begins; the base64 JSON of `lendList` follows (read by key-triggers.ts in Postgres). */
export const LEND_COMMENT_PREFIX = '/*repobase:own ';

/** The lend comment for `list`, ready to put in front of a statement. */
export function lendComment(list: ReturnType<typeof lendList>): string {
  return `${LEND_COMMENT_PREFIX}${Buffer.from(JSON.stringify(list)).toString('base64')}*/ `;
}

/** Statements a read key may run (anything they name is checked as usual). */
const READ_STATEMENTS: ReadonlySet<string> = new Set([
  'SelectStmt', 'CopyStmt', 'ExplainStmt', 'VariableSetStmt', 'VariableShowStmt', 'TransactionStmt',
  'ListenStmt', 'UnlistenStmt', 'FetchStmt', 'ClosePortalStmt', 'DeclareCursorStmt', 'PrepareStmt',
  'ExecuteStmt', 'DeallocateStmt', 'DiscardStmt', 'ConstraintsSetStmt', 'LockStmt',
]);

/** Statements no scoped key runs: code, maintenance, privileges. */
const NOT_FOR_KEYS: ReadonlyMap<string, string> = new Map([
  ['CreateFunctionStmt', 'creating functions and procedures'],
  ['AlterFunctionStmt', 'changing functions and procedures'],
  ['DefineStmt', 'creating aggregates, operators, collations and base types'],
  ['CreateCastStmt', 'creating casts'],
  ['CreateConversionStmt', 'creating conversions'],
  ['AlterOperatorStmt', 'changing operators'],
  ['AlterTSConfigurationStmt', 'changing text search configurations'],
  ['AlterTSDictionaryStmt', 'changing text search dictionaries'],
  ['AlterCollationStmt', 'changing collations'],
  ['VacuumStmt', 'VACUUM and ANALYZE'],
  ['ClusterStmt', 'CLUSTER'],
  ['GrantStmt', 'GRANT and REVOKE'],
  ['AlterDefaultPrivilegesStmt', 'ALTER DEFAULT PRIVILEGES'],
]);

function keyOf(rights: Rights): KeyRights {
  return rights.key!;
}

const scope = (rights: Rights): string => {
  const key = keyOf(rights);
  return scopeWords(rights.user, key.access, key.repos);
};
const label = (key: KeyRights): string => keyLabel(key.id, key.name);

/** A repo the user reaches but the key does not (resolve.ts). */
export function outsideScope(schema: string, rights: Rights): Refusal {
  return { code: denied, message: `repo "${schema}" is outside the scope of ${label(keyOf(rights))}, which has ${scope(rights)}`, hint: WIDER_KEY_HINT };
}

/** A change in a repo a read key reaches (resolve.ts). */
export function readOnlyKey(schema: string, command: string, rights: Rights): Refusal {
  return {
    code: denied,
    message: `${label(keyOf(rights))} is read-only: ${command} would change repo "${schema}"`,
    hint: `it has ${scope(rights)}; ${WIDER_KEY_HINT}`,
  };
}

function readOnly(rights: Rights, what: string): Refusal {
  return { code: denied, message: `${label(keyOf(rights))} is read-only: ${what}`, hint: `it has ${scope(rights)}; ${WIDER_KEY_HINT}` };
}

function needsFull(rights: Rights, what: string): Refusal {
  return { code: denied, message: `${what} needs a full API key: ${label(keyOf(rights))} has ${scope(rights)}`, hint: 'use a full key (one made without "repos" and "access")' };
}

/** A statement the control plane would perform (a repo made or dropped, sharing): never for a scoped key. */
export function handledRefusal(rights: Rights, command: string): Refusal {
  return needsFull(rights, command === 'GRANT' || command === 'ALTER DEFAULT PRIVILEGES' ? 'sharing a repo' : `${command} of a repo`);
}

/** Whether a reference changes something (rows, or structure), outside the session's temporary schema alone. */
const writes = (ref: NameRef): boolean => ref.need !== 'read';

/** The refusal of one statement for a scoped key, beyond the repos of its scope; null when it may run. */
export function keyRefusal(facts: StatementFacts, rights: Rights): Refusal | null {
  const key = keyOf(rights);
  const banned = NOT_FOR_KEYS.get(facts.kind);
  if (banned !== undefined) return needsFull(rights, banned);
  if (facts.largeObjectCall !== null) {
    return { code: denied, message: `${label(key)} cannot use large objects (${facts.largeObjectCall}()): they belong to the user, not to a repo`, hint: 'use a full key' };
  }
  if (key.access === 'read') return readKeyRefusal(facts, rights);
  const changes = facts.refs.filter((r) => r.need === 'own' && !r.temp);
  if (changes.length === 0) return null;
  if (changes.some((r) => r.kind === 'schema')) return needsFull(rights, `${facts.command} of a repo itself`);
  if (!key.ddl) {
    return { code: denied, message: `${label(key)} cannot run ${facts.command} here: this server does not let write keys change structure`, hint: 'the event triggers that hand objects to their users need a superuser admin role; use a full key' };
  }
  // Functions and types its DDL uses must be the system's or of its own repos (in Postgres too).
  const foreign = facts.refs.find((r) => r.kind === 'object' && r.need === 'read' && r.schema !== null && !isSystemSchema(r.schema) && !isTempSchema(r.schema) && rights.repos.get(r.schema) !== 'own');
  if (foreign !== undefined) {
    return { code: denied, message: `${facts.command} with a write key may use functions and types of its own repos only, not "${foreign.schema}".${foreign.name}`, hint: 'what a repo holds runs with the rights of whoever uses it: use a full key' };
  }
  return null;
}

function readKeyRefusal(facts: StatementFacts, rights: Rights): Refusal | null {
  if (!READ_STATEMENTS.has(facts.kind)) return readOnly(rights, `${facts.command} changes data or structure`);
  const ref = facts.refs.find(writes);
  if (ref !== undefined) return readOnly(rights, `${ref.command} changes data${ref.schema === null ? '' : ` in "${ref.schema}"`}`);
  if (facts.readWrite) return readOnly(rights, 'its transactions stay read-only (default_transaction_read_only, READ ONLY)');
  if (facts.writerCall !== null) return readOnly(rights, `${facts.writerCall}() changes data or other sessions`);
  if (facts.userCall !== null) {
    return readOnly(rights, `it calls built-in functions only, and ${facts.userCall}() is not one (repobase cannot tell whether it writes)`);
  }
  return null;
}

/**
 * The objects a write key's statements change, as the lend comment lists them (`[kind, schema,
 * name]`, kind `r` for a relation, `o` for another object): each qualified name, and an
 * unqualified one in each of the key's own repos on the search path.
 */
export function lendList(statements: readonly StatementFacts[], rights: Rights, path: readonly string[]): Array<['r' | 'o', string, string]> {
  const out: Array<['r' | 'o', string, string]> = [];
  const seen = new Set<string>();
  const add = (kind: 'r' | 'o', schema: string, name: string) => {
    const id = `${kind}\0${schema}\0${name}`;
    if (seen.has(id) || rights.repos.get(schema) !== 'own') return;
    seen.add(id);
    out.push([kind, schema, name]);
  };
  for (const facts of statements) {
    for (const ref of facts.refs) {
      if (ref.need !== 'own' || ref.temp || ref.kind === 'schema') continue;
      const kind = ref.kind === 'relation' ? 'r' : 'o';
      if (ref.schema !== null) add(kind, ref.schema, ref.name);
      else for (const schema of ref.path ?? path) add(kind, schema, ref.name);
    }
  }
  return out;
}
