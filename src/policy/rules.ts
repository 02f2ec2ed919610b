// Service rules at statement level: what is refused outright, session settings (search_path,
// roles), repo creation, LISTEN/NOTIFY channels, and statements that name nothing.
import { channelStatement } from './channels.js';
import type { Refusal } from './facts.js';
import { arr, fieldsOf, obj, str, stringConst, type Json, type JsonObject } from './json.js';
import { refusals } from './refusals.js';
import { citusSettingRefusal } from './citus.js';
import { noteReadOnlySetting } from './functions.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

const r = refusals;

/** Statement types refused whatever their arguments: privilege, role and server games. */
export const forbiddenStatements: ReadonlyMap<string, Refusal> = new Map([
  ['CreateRoleStmt', r.roles('CREATE ROLE/USER/GROUP')],
  ['AlterRoleStmt', r.roles('ALTER ROLE/USER/GROUP')],
  ['AlterRoleSetStmt', r.roles('ALTER ROLE … SET')],
  ['DropRoleStmt', r.roles('DROP ROLE/USER/GROUP')],
  ['DropOwnedStmt', r.roles('DROP OWNED')],
  ['GrantRoleStmt', r.grant('GRANT/REVOKE of role membership')],
  ['ReassignOwnedStmt', r.owner],
  ['CreatedbStmt', r.database('CREATE DATABASE')],
  ['DropdbStmt', r.database('DROP DATABASE')],
  ['AlterDatabaseStmt', r.database('ALTER DATABASE')],
  ['AlterDatabaseSetStmt', r.database('ALTER DATABASE … SET')],
  ['AlterDatabaseRefreshCollStmt', r.database('ALTER DATABASE … REFRESH COLLATION VERSION')],
  ['AlterSystemStmt', r.server('ALTER SYSTEM')],
  ['LoadStmt', r.server('LOAD')],
  ['CheckPointStmt', r.server('CHECKPOINT')],
  ['CreateAmStmt', r.server('CREATE ACCESS METHOD')],
  ['CreateExtensionStmt', r.extension('CREATE EXTENSION')],
  ['AlterExtensionStmt', r.extension('ALTER EXTENSION')],
  ['AlterExtensionContentsStmt', r.extension('ALTER EXTENSION … ADD/DROP')],
  ['AlterObjectDependsStmt', r.extension('DEPENDS ON EXTENSION')],
  ['CreateTableSpaceStmt', r.tablespace('CREATE TABLESPACE')],
  ['DropTableSpaceStmt', r.tablespace('DROP TABLESPACE')],
  ['AlterTableSpaceOptionsStmt', r.tablespace('ALTER TABLESPACE')],
  ['AlterTableMoveAllStmt', r.tablespace('ALTER … ALL IN TABLESPACE')],
  ['CreatePublicationStmt', r.replication('CREATE PUBLICATION')],
  ['AlterPublicationStmt', r.replication('ALTER PUBLICATION')],
  ['CreateSubscriptionStmt', r.replication('CREATE SUBSCRIPTION')],
  ['AlterSubscriptionStmt', r.replication('ALTER SUBSCRIPTION')],
  ['DropSubscriptionStmt', r.replication('DROP SUBSCRIPTION')],
  ['CreateFdwStmt', r.foreignData('CREATE FOREIGN DATA WRAPPER')],
  ['AlterFdwStmt', r.foreignData('ALTER FOREIGN DATA WRAPPER')],
  ['CreateForeignServerStmt', r.foreignData('CREATE SERVER')],
  ['AlterForeignServerStmt', r.foreignData('ALTER SERVER')],
  ['CreateUserMappingStmt', r.foreignData('CREATE USER MAPPING')],
  ['AlterUserMappingStmt', r.foreignData('ALTER USER MAPPING')],
  ['DropUserMappingStmt', r.foreignData('DROP USER MAPPING')],
  ['ImportForeignSchemaStmt', r.foreignData('IMPORT FOREIGN SCHEMA')],
  ['CreateForeignTableStmt', r.foreignData('CREATE FOREIGN TABLE')],
  ['CreatePLangStmt', r.language('CREATE LANGUAGE')],
  ['CreateEventTrigStmt', r.eventTrigger('CREATE EVENT TRIGGER')],
  ['AlterEventTrigStmt', r.eventTrigger('ALTER EVENT TRIGGER')],
  ['SecLabelStmt', r.securityLabel],
  ['CreateOpClassStmt', r.unsupported('CREATE OPERATOR CLASS')],
  ['CreateOpFamilyStmt', r.unsupported('CREATE OPERATOR FAMILY')],
  ['AlterOpFamilyStmt', r.unsupported('ALTER OPERATOR FAMILY')],
  ['CreateTransformStmt', r.unsupported('CREATE TRANSFORM')],
]);

/**
 * SET/RESET. Role changes are refused, except the resets (RESET ROLE, SET ROLE NONE, RESET
 * SESSION AUTHORIZATION): the proxy logs in as the user's own role and SET ROLE is never allowed,
 * so a reset can only return to where the session already is. search_path changes become
 * session changes (SET LOCAL ones last until the transaction ends).
 */
function variableSet(w: Walker, n: JsonObject): void {
  const name = (str(n.name) ?? '').toLowerCase();
  const kind = str(n.kind);
  if (kind === 'VAR_RESET_ALL') {
    if (!w.ctx.body) w.facts.settings.push({ kind: 'reset_search_path' });
    return;
  }
  if (name === 'role' || name === 'session_authorization') {
    const value = stringConst(arr(n.args)[0])?.toLowerCase();
    const isReset = kind === 'VAR_RESET' || kind === 'VAR_SET_DEFAULT' || (name === 'role' && value === 'none');
    if (!isReset) w.refuse(r.roleGames(name === 'role' ? 'SET ROLE' : 'SET SESSION AUTHORIZATION'));
    return;
  }
  const resets = kind === 'VAR_RESET' || kind === 'VAR_SET_DEFAULT';
  // A reset returns to the role's setting: a read key's role keeps its transactions read-only.
  if (kind === 'VAR_SET_MULTI') readWriteOptions(w, n.args);
  else if (!resets) noteReadOnlySetting(w, name, arr(n.args).map((a) => stringConst(a) ?? '').join(','));
  const citus = resets ? undefined : citusSettingRefusal(name);
  if (citus) return w.refuse(citus);
  if (name !== 'search_path' || kind === 'VAR_SET_CURRENT') return;
  if (w.ctx.body) return;
  const local = n.is_local === true ? ({ local: true } as const) : undefined;
  if (kind === 'VAR_RESET' || kind === 'VAR_SET_DEFAULT') {
    w.facts.settings.push({ kind: 'reset_search_path', ...local });
    return;
  }
  const value: string[] = [];
  for (const arg of arr(n.args)) {
    const s = stringConst(arg);
    // Postgres rejects a number in search_path; nothing changes then.
    if (s === undefined) return;
    value.push(s);
  }
  w.facts.settings.push({ kind: 'search_path', value, position: null, ...local });
}

/** COMMIT, END, PREPARE TRANSACTION and ROLLBACK end the transaction: the front end follows the search_path through it. */
const TRANSACTION_ENDS: ReadonlyMap<string, boolean> = new Map([
  ['TRANS_STMT_COMMIT', true],
  ['TRANS_STMT_PREPARE', true],
  ['TRANS_STMT_ROLLBACK', false],
]);

/** The refusal a function's `SET role = …` clause deserves, if any (it runs at every call). */
export function functionSetting(n: JsonObject): Refusal | undefined {
  const name = (str(n.name) ?? '').toLowerCase();
  if (name === 'role' || name === 'session_authorization') return r.roleGames(`a function's SET ${name}`);
  return citusSettingRefusal(name);
}

/** `READ WRITE` among transaction options (BEGIN, START TRANSACTION, SET TRANSACTION, SET SESSION CHARACTERISTICS). */
function readWriteOptions(w: Walker, options: Json | undefined): void {
  for (const option of arr(options)) {
    const def = fieldsOf(option, 'DefElem');
    if (str(def?.defname) !== 'transaction_read_only') continue;
    const value = fieldsOf(def?.arg, 'A_Const');
    if (obj(value?.ival)?.ival !== 1) w.facts.readWrite = true;
  }
}

function transaction(w: Walker, n: JsonObject, scope: Scope): void {
  readWriteOptions(w, n.options);
  const commit = TRANSACTION_ENDS.get(str(n.kind) ?? '');
  if (commit !== undefined && !w.ctx.body) w.facts.settings.push({ kind: 'transaction_end', commit });
  w.rest(n, [], 'read', scope);
}

function discard(w: Walker, n: JsonObject): void {
  if (str(n.target) === 'DISCARD_ALL' && !w.ctx.body) w.facts.settings.push({ kind: 'reset_search_path' });
}

function createSchema(w: Walker, n: JsonObject): void {
  if (arr(n.schemaElts).length > 0) w.refuse(r.schemaElements);
  if (w.ctx.body) w.refuse(r.schemaInBody);
  const authRole = str(obj(n.authrole)?.rolename) ?? null;
  // CREATE SCHEMA AUTHORIZATION x names the schema after the role.
  const name = str(n.schemaname) ?? authRole ?? '';
  w.facts.schema ??= { kind: 'create', name, ifNotExists: n.if_not_exists === true, authRole };
}


const plain = (w: Walker, n: JsonObject, scope: Scope): void => w.rest(n, [], 'read', scope);

export const ruleHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['VariableSetStmt', { handle: variableSet, command: 'SET' }],
  ['DiscardStmt', { handle: discard, command: 'DISCARD' }],
  ['CreateSchemaStmt', { handle: createSchema, command: 'CREATE SCHEMA' }],
  ['ListenStmt', { handle: (w, n) => channelStatement(w, n, true), command: 'LISTEN' }],
  ['NotifyStmt', { handle: (w, n) => channelStatement(w, n, false), command: 'NOTIFY' }],
  ['UnlistenStmt', { handle: (w, n) => channelStatement(w, n, false), command: 'UNLISTEN' }],
  ['TransactionStmt', { handle: transaction, command: 'TRANSACTION' }],
  ['VariableShowStmt', { handle: plain, command: 'SHOW' }],
  ['FetchStmt', { handle: plain, command: 'FETCH' }],
  ['ClosePortalStmt', { handle: plain, command: 'CLOSE' }],
  ['DeallocateStmt', { handle: plain, command: 'DEALLOCATE' }],
  ['ConstraintsSetStmt', { handle: plain, command: 'SET CONSTRAINTS' }],
  ['ExecuteStmt', { handle: plain, command: 'EXECUTE' }],
  ['ExplainStmt', { handle: plain, command: 'EXPLAIN' }],
  ['DeclareCursorStmt', { handle: plain, command: 'DECLARE' }],
  ['PrepareStmt', { handle: plain, command: 'PREPARE' }],
  ['CallStmt', { handle: plain, command: 'CALL' }],
  ['ReturnStmt', { handle: plain, command: 'RETURN' }],
];
