// Service rules on function calls, by the class of the built-in called (`catalog-functions.ts`):
// refused ones are refused; checked ones have their object arguments checked as names when they
// are constant strings (nextval('"bob/x".s'), to_regclass('bob/x.t'), has_table_privilege(…)),
// and are otherwise redirected to their stand-in, which hides objects outside the caller's world.
// Also names hidden in casts of strings ('bob/x.t'::regclass), set_config's settings and
// pg_notify's channels.
import { classifyFunction, regTypeOf, unclassifiedRefusal, type CheckedFunction } from './catalog-functions.js';
import { noteFunctionRedirect } from './catalog-refs.js';
import { HIDING_FUNCTIONS, PID_FUNCTIONS } from './backend-pid.js';
import type { Need } from './facts.js';
import { boolConst, nodeOf, stringConst, type Json } from './json.js';
import { splitIdentifiers } from './names.js';
import { refusals } from './refusals.js';
import { citusSettingRefusal } from './citus.js';
import type { Walker } from './walker.js';

/** A string constant, also through casts (`'x'::text`). */
function constString(value: Json | undefined): string | undefined {
  const direct = stringConst(value);
  if (direct !== undefined) return direct;
  const node = nodeOf(value);
  return node?.[0] === 'TypeCast' ? constString(node[1].arg) : undefined;
}

/** Text that reads as an oid: it names an object by number, not by a name the policy can check. */
export function isOidText(text: string): boolean {
  return /^\s*\d+\s*$/.test(text);
}

/** Built-ins that change data or reach other sessions: a read key may not call them (key-scope.ts). */
const WRITING_BUILTINS: ReadonlySet<string> = new Set(['nextval', 'setval', 'pg_notify']);
/** Settings that make transactions read-only: a read key's role has them on. */
const READ_ONLY_SETTINGS: ReadonlySet<string> = new Set(['default_transaction_read_only', 'transaction_read_only']);

/** Whether a setting's value keeps transactions read-only (Postgres' spellings of true). */
export function keepsReadOnly(value: string | undefined): boolean {
  return value !== undefined && ['on', 'true', 'yes', '1', 't', 'y', 'o'].includes(value.trim().toLowerCase());
}

/** Notes a SET or set_config that may make the transaction read-write (a read key may not). */
export function noteReadOnlySetting(w: Walker, name: string, value: string | undefined): void {
  if (READ_ONLY_SETTINGS.has(name) && !keepsReadOnly(value)) w.facts.readWrite = true;
}

/** Applies the service rules to a call of `names(args)`. */
export function checkFunctionCall(w: Walker, names: readonly string[], args: readonly Json[], location?: Json): void {
  // A user's own function may share a built-in's name; only built-ins are judged here.
  if (names.length > 2 || (names.length === 2 && names[0] !== 'pg_catalog')) {
    w.facts.userCall ??= names.join('.');
    return;
  }
  const name = names[names.length - 1] ?? '';
  const c = classifyFunction(name);
  if (c === undefined) {
    // Unqualified, it is the user's own function (or one Postgres added since: see the tests).
    if (names.length === 2) w.refuse(unclassifiedRefusal(name));
    else w.facts.userCall ??= name;
    return;
  }
  if (WRITING_BUILTINS.has(name)) w.facts.writerCall ??= name;
  if (name.startsWith('lo_') || name === 'loread' || name === 'lowrite') w.facts.largeObjectCall ??= name;
  if (c.kind === 'refused') return w.refuse(c.refusal);
  if (name === 'set_config') setConfig(w, names, args, location);
  if (name === 'pg_notify') notify(w, names, args, location);
  if (PID_FUNCTIONS.has(name) || HIDING_FUNCTIONS.has(name)) standIn(w, names, location);
  // currval/lastval read the session's sequence state, which a pooled wire client carries, and
  // current_setting of a custom setting may name one another client left on the backend (session-stand-ins.ts).
  const redirected = (SEQUENCE_READS.has(name) || (name === 'current_setting' && readsCustomSetting(args[0]))) && standIn(w, names, location);
  if (c.kind === 'checked') checkedCall(w, names, c.spec, args, location, redirected);
}

/** Whether current_setting's name argument is a custom setting's (`app.tenant`), or not known before it runs. */
function readsCustomSetting(arg: Json | undefined): boolean {
  const name = constString(arg);
  return name === undefined || name.includes('.');
}

/** Built-ins redirected to stand-ins that answer with the sequence state the client carries. */
const SEQUENCE_READS: ReadonlySet<string> = new Set(['currval', 'lastval']);

/**
 * A checked function: constant names are checked here; a call with any other object (an oid, a
 * column, an expression) goes to its stand-in, as does one whose answer names an object.
 */
function checkedCall(w: Walker, names: readonly string[], spec: CheckedFunction, args: readonly Json[], location: Json | undefined, redirected: boolean): void {
  const objects = (spec.args[args.length] ?? []).filter((o) => o.kind !== 'server');
  let redirect = spec.result !== undefined && objects.length === 0;
  for (const o of objects) {
    const text = constString(args[o.at]);
    const type = regTypeOf[o.kind];
    if (text !== undefined && type !== undefined && !isOidText(text)) regStringRef(w, type, text, o.need ?? 'read', undefined);
    else redirect = true;
  }
  if (redirect && !redirected) noteFunctionRedirect(w, names, location, `${names[names.length - 1] ?? ''}()`);
}

function notify(w: Walker, names: readonly string[], args: readonly Json[], location: Json | undefined): void {
  if (w.ctx.offsets !== null && !w.ctx.body && typeof location === 'number' && location >= 0) {
    // Redirected to the service's pg_notify, which puts the channel in the caller's namespace.
    noteFunctionRedirect(w, names, location, 'pg_notify()');
    return;
  }
  const channel = constString(args[0]);
  if (channel === undefined) w.refuse(refusals.nonConstant('pg_notify', 'channel name'));
  else w.facts.channels.push(channel);
}

/**
 * A top-level call goes to the stand-in that shows a wire client its own process id, or takes it
 * for its backend's, or leaves out what the front end keeps there (backend-pid.ts). A body's call
 * is left as it is: it runs later, as on the backend.
 */
function standIn(w: Walker, names: readonly string[], location: Json | undefined): boolean {
  const name = names[names.length - 1] ?? '';
  if (w.ctx.offsets === null || w.ctx.body || typeof location !== 'number' || location < 0) return false;
  noteFunctionRedirect(w, names, location, `${name}()`);
  return true;
}

function setConfig(w: Walker, names: readonly string[], args: readonly Json[], location: Json | undefined): void {
  const setting = constString(args[0])?.toLowerCase();
  // A name not known here may be a read-only one: for a read key, as if it were.
  noteReadOnlySetting(w, setting ?? 'transaction_read_only', setting === undefined ? undefined : constString(args[1]));
  if (setting === undefined) {
    // Known when it runs: the stand-in refuses what would be refused here (catalog-wrappers.ts).
    if (w.ctx.offsets === null) w.refuse(refusals.nonConstant('set_config', 'setting name'));
    else noteFunctionRedirect(w, names, location, 'set_config()');
  } else if (setting === 'role' || setting === 'session_authorization') {
    w.refuse(refusals.roleGames(`set_config('${setting}', …)`));
  } else if (setting === 'restrict_nonsystem_relation_kind') {
    // pg_dump's guard against views: the stand-in keeps it but for the service's catalog views.
    noteFunctionRedirect(w, names, location, 'set_config()');
  } else if (citusSettingRefusal(setting)) {
    w.refuse(citusSettingRefusal(setting)!);
  } else if (setting === 'search_path') {
    const value = constString(args[1]);
    const local = boolConst(args[2]);
    if (value === undefined || local === undefined) {
      w.refuse(refusals.nonConstant('set_config', 'search_path value and is_local flag'));
    } else {
      const path = splitIdentifiers(value, ',');
      // An invalid list makes Postgres fail the call: nothing changes.
      if (path !== undefined && !w.ctx.body) w.facts.settings.push({ kind: 'search_path', value: path, position: null, ...(local ? { local: true as const } : undefined) });
    }
  }
}

/** The name inside a string read as a reg* type: 'bob/x.t'::regclass reads table t of bob/x. */
export function regStringRef(w: Walker, type: string, text: string, need: Need, location: Json | undefined): void {
  // A number is an OID: nothing to resolve here (such casts and calls go to the stand-ins).
  if (isOidText(text)) return;
  switch (type) {
    case 'regclass': {
      const names = splitIdentifiers(text, '.');
      if (names !== undefined && names.length >= 1 && names.length <= 3) w.qualified('relation', names, need, { location });
      return;
    }
    case 'regnamespace': {
      const names = splitIdentifiers(text, '.');
      if (names?.length === 1) w.ref({ kind: 'schema', schema: names[0] ?? '', name: '', need: 'read', create: false, temp: false, location });
      return;
    }
    case 'regproc':
    case 'regprocedure':
    case 'regoper':
    case 'regoperator':
    case 'regtype':
    case 'regcollation':
    case 'regconfig':
    case 'regdictionary':
      w.qualifiedUse(splitIdentifiers(text, '.', true), location);
      return;
    default:
      return;
  }
}
