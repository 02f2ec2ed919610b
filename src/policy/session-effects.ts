// What a statement does to its session beyond its own transaction: the facts the wire front end
// needs to pool backends by transaction (src/wire/client-state.ts) while each client keeps the
// session it would have on a backend of its own. Settings it sets or resets, prepared statements,
// and state that lives in one backend and cannot be carried to another (temporary objects,
// session advisory locks, LISTEN, cursors WITH HOLD). Code the policy cannot see into — a call of
// a function that is not a built-in, a DO block, CALL — is reported as such: whatever it does to
// the session, the front end must find out from the backend.
//
// Read from the statement's parse tree alone, like the rest of the analysis (one cache for every
// user). Function bodies and the queries of views, rules and prepared statements are not run by
// the statement that defines them, so calls inside them are not the statement's.
import { arr, boolConst, fieldsOf, nameList, nodeOf, obj, str, stringConst, type Json, type JsonObject } from './json.js';
import { isTempSchema, quoteIdent } from './names.js';
import { PID_FUNCTIONS, pidViews } from './backend-pid.js';
import type { SessionEffect } from './types.js';

/** Session-level advisory lock functions: the lock outlives the transaction. The `try` ones may take none. */
const LOCKS = new Set(['pg_advisory_lock', 'pg_advisory_lock_shared']);
const TRY_LOCKS = new Set(['pg_try_advisory_lock', 'pg_try_advisory_lock_shared']);
const UNLOCKS = new Set(['pg_advisory_unlock', 'pg_advisory_unlock_shared']);
/** Functions reading the session's own sequence state (what nextval last returned in it). */
const SEQUENCE_STATE = new Set(['currval', 'lastval']);
/** Functions that set it. */
const SEQUENCE_WRITES = new Set(['nextval', 'setval']);
/** DeclareCursorStmt's option bit for WITH HOLD (CURSOR_OPT_HOLD). */
const CURSOR_OPT_HOLD = 0x20;

/**
 * Statements whose expressions are stored, not run: the body, defaults and checks of what they
 * create run later (a call of a function is then the later statement's business).
 */
const STORING = new Set([
  'CreateFunctionStmt', 'ViewStmt', 'CreateTrigStmt', 'RuleStmt', 'CreatePolicyStmt', 'AlterPolicyStmt',
  'CreateDomainStmt', 'CreateStmt', 'PrepareStmt', 'CreateEventTrigStmt', 'DefineStmt', 'CommentStmt',
]);
/**
 * Statements that change what existing names mean — the columns a relation or a type has
 * (DROP has an effect of its own): a statement prepared before may plan on what they changed.
 */
const SCHEMA_CHANGING = /^(Alter|Rename)\w*Stmt$/;

/** Statements that create objects: one in the session's temporary schema pins the session. */
const CREATING = /^(Create|Define|View|Composite|Index|Rule)/;

/**
 * The session effects of one top-level statement (empty for most statements). `text` is where the
 * statement lies in its query string (UTF-16 indexes): a SET or PREPARE is replayed from it.
 */
export function sessionEffects(node: Json, text: { start: number; end: number }): SessionEffect[] {
  const top = nodeOf(node);
  if (top === undefined) return [];
  const [kind, n] = top;
  const out: SessionEffect[] = [];
  switch (kind) {
    case 'VariableSetStmt':
      variableSet(n, text, out);
      break;
    case 'VariableShowStmt': {
      const name = (str(n.name) ?? '').toLowerCase();
      if (isCustomSetting(name)) out.push({ kind: 'show', name, start: text.start, end: text.end });
      break;
    }
    case 'DiscardStmt': {
      const target = str(n.target);
      out.push({ kind: 'discard', what: target === 'DISCARD_ALL' ? 'all' : target === 'DISCARD_TEMP' ? 'temp' : target === 'DISCARD_PLANS' ? 'plans' : 'sequences', end: text.end });
      break;
    }
    case 'PrepareStmt':
      out.push({ kind: 'prepare', name: str(n.name) ?? '', start: text.start, end: text.end, inner: sessionEffects(n.query ?? null, text) });
      break;
    case 'DeallocateStmt':
      out.push({ kind: 'deallocate', name: n.isall === true ? null : (str(n.name) ?? '') });
      break;
    case 'ListenStmt':
      out.push({ kind: 'listen' });
      break;
    case 'NotifyStmt':
      out.push({ kind: 'notify' });
      break;
    case 'UnlistenStmt':
      out.push({ kind: 'unlisten', all: str(n.conditionname) === undefined });
      break;
    case 'DeclareCursorStmt':
      if (typeof n.options === 'number' && (n.options & CURSOR_OPT_HOLD) !== 0) out.push({ kind: 'hold_cursor', name: str(n.portalname) ?? '' });
      break;
    case 'ClosePortalStmt':
      out.push({ kind: 'close_cursor', name: str(n.portalname) ?? null });
      break;
    case 'TransactionStmt': {
      const t = str(n.kind);
      if (t === 'TRANS_STMT_SAVEPOINT' || t === 'TRANS_STMT_RELEASE' || t === 'TRANS_STMT_ROLLBACK_TO') {
        out.push({ kind: 'savepoint', rollback: t === 'TRANS_STMT_ROLLBACK_TO' });
      }
      break;
    }
    case 'DoStmt':
    case 'CallStmt':
      out.push({ kind: 'unknown' });
      break;
    case 'DropStmt':
      out.push({ kind: 'drop' });
      break;
    default:
      if (SCHEMA_CHANGING.test(kind) || (kind === 'ViewStmt' && n.replace === true)) out.push({ kind: 'ddl' });
      break;
  }
  if (kind === 'CreateFunctionStmt' || kind === 'DoStmt') {
    const names = settingNames(JSON.stringify(n));
    if (names.length > 0) out.push({ kind: 'names', names, ran: kind === 'DoStmt' });
  }
  if (createsTemp(n, CREATING.test(kind))) out.push({ kind: 'temp' });
  const written = rowsWritten(kind, n);
  if (written !== undefined) out.push({ kind: 'sequence_write', table: written });
  if (!STORING.has(kind)) scan(node, out);
  return out;
}

/**
 * The table (as written, quoted) whose column defaults a statement may run — nextval() of a serial
 * or identity column: INSERT, MERGE, COPY FROM, and an UPDATE that sets a column to DEFAULT.
 */
function rowsWritten(kind: string, n: JsonObject): string | undefined {
  const writes = kind === 'InsertStmt' || kind === 'MergeStmt' || (kind === 'CopyStmt' && n.is_from === true) || (kind === 'UpdateStmt' && JSON.stringify(n.targetList ?? null).includes('"SetToDefault"'));
  const rel = writes ? obj(n.relation) : undefined;
  const name = rel === undefined ? undefined : str(rel.relname);
  if (name === undefined) return undefined;
  const schema = str(rel!.schemaname);
  return schema === undefined ? quoteIdent(name) : `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * Custom settings a function body names (`set_config('app.tenant', …)`, `SET app.tenant = …`):
 * the body is text, and a rough reading is enough — a name read wrongly only costs a look-up.
 */
function settingNames(body: string): string[] {
  const names = new Set<string>();
  for (const m of body.matchAll(/set_config\s*\(\s*'([A-Za-z_][\w$]*\.[\w$.]+)'/gi)) names.add(m[1]!.toLowerCase());
  for (const m of body.matchAll(/\bSET\s+(?:SESSION\s+)?([A-Za-z_][\w$]*\.[A-Za-z_][\w$]*)\b/gi)) names.add(m[1]!.toLowerCase());
  return [...names];
}

/** Whether a setting's name is a custom one (`app.tenant`): Postgres makes it exist by setting it. */
export function isCustomSetting(name: string): boolean {
  return name.includes('.');
}

/** SET / RESET at session level (SET LOCAL and SET TRANSACTION end with the transaction, but a custom setting stays defined). */
function variableSet(n: JsonObject, text: { start: number; end: number }, out: SessionEffect[]): void {
  const name = (str(n.name) ?? '').toLowerCase();
  if (n.is_local === true) {
    if (isCustomSetting(name)) out.push({ kind: 'defines', name });
    return;
  }
  switch (str(n.kind)) {
    case 'VAR_SET_VALUE':
      out.push({ kind: 'set_text', name, start: text.start, end: text.end });
      return;
    case 'VAR_SET_DEFAULT':
    case 'VAR_RESET':
      out.push({ kind: 'reset', name, end: text.end });
      return;
    case 'VAR_RESET_ALL':
      out.push({ kind: 'reset_all', end: text.end });
      return;
    case 'VAR_SET_CURRENT':
      out.push({ kind: 'set_unknown', name });
      return;
    case 'VAR_SET_MULTI':
      // SET SESSION CHARACTERISTICS AS TRANSACTION …: the defaults of later transactions.
      if (name === 'session characteristics') for (const item of arr(n.args)) sessionCharacteristic(fieldsOf(item, 'DefElem'), out);
      return;
    default:
      return;
  }
}

function sessionCharacteristic(d: JsonObject | undefined, out: SessionEffect[]): void {
  const option = str(d?.defname);
  if (d === undefined || option === undefined) return;
  const name = `default_${option}`;
  const text = stringConst(d.arg);
  const flag = obj(nodeOf(d.arg)?.[1].ival);
  const value = text ?? (flag === undefined ? undefined : flag.ival === 1 ? 'on' : 'off');
  out.push(value === undefined ? { kind: 'set_unknown', name } : { kind: 'set', name, value });
}

/**
 * Whether a statement creates a temporary object that outlives its transaction: a relation made
 * TEMP (also `SELECT … INTO TEMP`) but `ON COMMIT DROP`, or, for a creating statement, anything
 * named in the temporary schema (`pg_temp.f`).
 */
function createsTemp(n: Json, creating: boolean): boolean {
  if (Array.isArray(n)) return n.some((item) => createsTemp(item, creating));
  const o = obj(n);
  if (o === undefined) return false;
  // Dropped at the end of its transaction: nothing of it outlives the transaction.
  if (o.oncommit === 'ONCOMMIT_DROP' || o.onCommit === 'ONCOMMIT_DROP') return false;
  if (o.relpersistence === 't') return true;
  if (creating && typeof o.schemaname === 'string' && isTempSchema(o.schemaname)) return true;
  for (const key in o) {
    const value = o[key];
    const names = creating && (key === 'funcname' || key === 'defnames' || key === 'names' || key === 'typeName') ? nameList(value) : undefined;
    if (names !== undefined && names.length >= 2 && isTempSchema(names[names.length - 2] ?? '')) return true;
    if (typeof value === 'object' && value !== null && createsTemp(value, creating)) return true;
  }
  return false;
}

/** Function calls and EXECUTEs anywhere in a statement that runs its expressions now. */
function scan(value: Json | undefined, out: SessionEffect[]): void {
  if (Array.isArray(value)) {
    for (const item of value) scan(item, out);
    return;
  }
  const node = nodeOf(value);
  const [type, o] = node ?? [undefined, obj(value)];
  if (o === undefined) return;
  if (type === 'ExecuteStmt') out.push({ kind: 'execute', name: str(o.name) ?? '' });
  else if (type !== undefined && STORING.has(type)) return;
  // A FuncCall, wrapped or inlined (the `funccall` of a RangeFunction item).
  if (type === 'FuncCall' || (type === undefined && Array.isArray(o.funcname) && 'funcformat' in o)) call(o, out);
  // A relation that names the session's backend by the client's process id, as pg_backend_pid() does,
  // or that lists the user's sessions or the session's prepared statements.
  else if (type === 'RangeVar' && (o.schemaname === undefined || o.schemaname === 'pg_catalog')) sessionRelation(str(o.relname) ?? '', out);
  for (const key in o) {
    const field = o[key];
    if (typeof field === 'object' && field !== null) scan(field, out);
  }
}

function call(n: JsonObject, out: SessionEffect[]): void {
  const names = nameList(n.funcname) ?? [];
  const schema = names.length >= 2 ? names[names.length - 2] : undefined;
  const name = names[names.length - 1] ?? '';
  if (names.length > 2 || (schema !== undefined && schema !== 'pg_catalog' && schema !== 'information_schema')) {
    if (!out.some((e) => e.kind === 'unknown')) out.push({ kind: 'unknown' });
    return settingsPassed(n, out);
  }
  if (name === 'set_config') return setConfig(arr(n.args), out);
  if (name === 'current_setting') {
    const setting = stringConst(arr(n.args)[0]);
    if ((setting === undefined || isCustomSetting(setting)) && !out.some((e) => e.kind === 'reads_custom')) out.push({ kind: 'reads_custom' });
    return;
  }
  if (LOCKS.has(name)) return void out.push({ kind: 'lock', surely: true });
  if (TRY_LOCKS.has(name)) return void out.push({ kind: 'lock', surely: false });
  if (UNLOCKS.has(name)) return void out.push({ kind: 'unlock' });
  if (name === 'pg_advisory_unlock_all') return void out.push({ kind: 'unlock_all' });
  if (SEQUENCE_STATE.has(name)) return void out.push({ kind: 'sequence' });
  if (SEQUENCE_WRITES.has(name)) {
    const sequence = stringConst(arr(n.args)[0]);
    return void out.push(sequence === undefined ? { kind: 'sequence_write' } : { kind: 'sequence_write', sequence });
  }
  if (PID_FUNCTIONS.has(name)) return backendPid(out);
  if (name === 'pg_notify') return void (out.some((e) => e.kind === 'notify') || out.push({ kind: 'notify' }));
  // Built-in or not is known only to the server (extensions add built-ins): the front end checks.
  if (schema === undefined && !out.some((e) => e.kind === 'call' && e.name === name)) out.push({ kind: 'call', name });
  if (schema === undefined) settingsPassed(n, out);
}

/** A name like a custom setting's. */
const SETTING_NAME = /^[A-Za-z_][\w$]*\.[A-Za-z_][\w$.]*$/;

/**
 * Constant strings a call of a function that may be the user's passes that look like custom
 * settings' names (`set_tenant('app.tenant', …)`): the function may set them, and Postgres lists
 * custom settings nowhere, so the front end asks for these by name after it ran.
 */
function settingsPassed(n: JsonObject, out: SessionEffect[]): void {
  let names: string[] | undefined;
  for (const arg of arr(n.args)) {
    const s = stringConst(arg);
    if (s !== undefined && SETTING_NAME.test(s)) (names ??= []).push(s.toLowerCase());
  }
  if (names !== undefined) out.push({ kind: 'names', names, ran: true });
}

function sessionRelation(name: string, out: SessionEffect[]): void {
  if (pidViews.has(name)) backendPid(out);
  const what = name === 'pg_stat_activity' ? 'activity' : name === 'pg_prepared_statements' ? 'statements' : undefined;
  if (what !== undefined && !out.some((e) => e.kind === 'reads_sessions' && e.what === what)) out.push({ kind: 'reads_sessions', what });
}

function backendPid(out: SessionEffect[]): void {
  if (!out.some((e) => e.kind === 'backend_pid')) out.push({ kind: 'backend_pid' });
}

/** set_config(name, value, is_local): a session setting unless is_local is true. */
function setConfig(args: readonly Json[], out: SessionEffect[]): void {
  const name = stringConst(args[0])?.toLowerCase();
  const local = boolConst(args[2]);
  if (local === true) {
    if (name !== undefined && isCustomSetting(name)) out.push({ kind: 'defines', name });
    return;
  }
  if (name === undefined || local === undefined) return void out.push({ kind: 'unknown' });
  const value = stringConst(args[1]);
  out.push(value === undefined ? { kind: 'set_unknown', name } : { kind: 'set', name, value });
}
