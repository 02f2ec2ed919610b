// Service rules on function calls, and names hidden in string arguments: nextval('"bob/x".s'),
// to_regclass('bob/x.t'), 'bob/x.t'::regclass name relations the tree shows only as text.
import { CATALOG_SCHEMA } from './catalog-views.js';
import type { Need } from './facts.js';
import { boolConst, nodeOf, stringConst, type Json } from './json.js';
import { splitIdentifiers } from './names.js';
import { refusals } from './refusals.js';
import { citusFunctionRefusal, citusSettingRefusal } from './citus.js';
import { readingSettingRefusal } from './settings.js';
import type { Walker } from './walker.js';

// Functions that run SQL handed to them as text: the policy cannot check that SQL.
const sqlTextFunctions = new Set([
  'query_to_xml', 'query_to_xmlschema', 'query_to_xml_and_xmlschema',
  'cursor_to_xml', 'cursor_to_xmlschema',
  'table_to_xml', 'table_to_xmlschema', 'table_to_xml_and_xmlschema',
  'schema_to_xml', 'schema_to_xmlschema', 'schema_to_xml_and_xmlschema',
  'database_to_xml', 'database_to_xmlschema', 'database_to_xml_and_xmlschema',
  'ts_stat',
]);

// Server file access; Postgres would refuse most of them to a user role anyway, this says why.
const fileFunctions = new Set([
  'pg_read_file', 'pg_read_binary_file', 'pg_ls_dir', 'pg_stat_file', 'lo_import', 'lo_export',
  'pg_ls_logdir', 'pg_ls_waldir', 'pg_ls_tmpdir', 'pg_ls_archive_statusdir', 'pg_ls_logicalsnapdir',
  'pg_ls_logicalmapdir', 'pg_ls_replslotdir', 'pg_current_logfile', 'pg_file_write', 'pg_file_rename',
  'pg_file_unlink', 'pg_logdir_ls',
]);

const first = (need: Need) => (): Array<[number, Need]> => [[0, need]];
// has_table_privilege([role,] table, privilege): the table is the middle argument of three.
const privilegeTable = (roleArgc: number) => (argc: number): Array<[number, Need]> => [[argc === roleArgc ? 1 : 0, 'read']];

/** Functions taking a relation name as text or regclass: argument index → access needed. */
const relationArgs = new Map<string, (argc: number) => Array<[number, Need]>>([
  ['nextval', first('write')],
  ['setval', first('write')],
  ['currval', first('read')],
  ['pg_get_serial_sequence', first('read')],
  ['pg_sequence_last_value', first('read')],
  ['to_regclass', first('read')],
  ['pg_relation_size', first('read')],
  ['pg_total_relation_size', first('read')],
  ['pg_table_size', first('read')],
  ['pg_indexes_size', first('read')],
  ['pg_relation_filenode', first('read')],
  ['pg_relation_filepath', first('read')],
  ['pg_relation_is_publishable', first('read')],
  ['pg_partition_tree', first('read')],
  ['pg_partition_root', first('read')],
  ['pg_partition_ancestors', first('read')],
  ['pg_get_viewdef', first('read')],
  ['has_table_privilege', privilegeTable(3)],
  ['has_sequence_privilege', privilegeTable(3)],
  ['has_any_column_privilege', privilegeTable(3)],
  ['has_column_privilege', privilegeTable(4)],
]);

/** to_regX(text) functions and the reg type their text is read as. */
const regFunctions = new Map([
  ['to_regnamespace', 'regnamespace'], ['to_regproc', 'regproc'], ['to_regprocedure', 'regprocedure'],
  ['to_regoper', 'regoper'], ['to_regoperator', 'regoperator'], ['to_regtype', 'regtype'],
  ['to_regtypemod', 'regtype'], ['to_regcollation', 'regcollation'],
]);

/** A string constant, also through casts (`'x'::text`). */
function constString(value: Json | undefined): string | undefined {
  const direct = stringConst(value);
  if (direct !== undefined) return direct;
  const node = nodeOf(value);
  return node?.[0] === 'TypeCast' ? constString(node[1].arg) : undefined;
}

/** Applies the service rules to a call of `names(args)`. */
export function checkFunctionCall(w: Walker, names: readonly string[], args: readonly Json[], location?: Json): void {
  // A user's own function may share a built-in's name; only built-ins are judged here.
  if (names.length > 2 || (names.length === 2 && names[0] !== 'pg_catalog')) return;
  const name = names[names.length - 1] ?? '';
  if (sqlTextFunctions.has(name) || name.startsWith('dblink')) w.refuse(refusals.sqlTextFunction(name));
  if (fileFunctions.has(name)) w.refuse(refusals.fileFunction(name));
  const citus = citusFunctionRefusal(name);
  if (citus) w.refuse(citus);
  if (name === 'set_config') setConfig(w, args);
  if (name === 'pg_notify' && w.ctx.offsets !== null && !w.ctx.body && typeof location === 'number' && location >= 0) {
    // Redirected to the service's pg_notify, which puts the channel in the caller's namespace.
    w.facts.catalog.push({ kind: 'function', location, schema: names.length === 2 ? 'pg_catalog' : null, name, target: CATALOG_SCHEMA });
  } else if (name === 'pg_notify') {
    const channel = constString(args[0]);
    if (channel === undefined) w.refuse(refusals.nonConstant('pg_notify', 'channel name'));
    else w.facts.channels.push(channel);
  }
  for (const [index, need] of relationArgs.get(name)?.(args.length) ?? []) {
    const text = constString(args[index]);
    if (text !== undefined) regStringRef(w, 'regclass', text, need, undefined);
  }
  const reg = regFunctions.get(name);
  const text = constString(args[0]);
  if (reg !== undefined && text !== undefined) regStringRef(w, reg, text, 'read', undefined);
}

function setConfig(w: Walker, args: readonly Json[]): void {
  const setting = constString(args[0])?.toLowerCase();
  if (setting === undefined) {
    w.refuse(refusals.nonConstant('set_config', 'setting name'));
  } else if (setting === 'role' || setting === 'session_authorization') {
    w.refuse(refusals.roleGames(`set_config('${setting}', …)`));
  } else if (citusSettingRefusal(setting)) {
    w.refuse(citusSettingRefusal(setting)!);
  } else if (setting === 'standard_conforming_strings' || setting === 'client_encoding') {
    const refusal = readingSettingRefusal(setting, constString(args[1]) ?? '?');
    if (refusal) w.refuse(refusal);
  } else if (setting === 'search_path') {
    const value = constString(args[1]);
    const local = boolConst(args[2]);
    if (value === undefined || local === undefined) {
      w.refuse(refusals.nonConstant('set_config', 'search_path value and is_local flag'));
    } else if (local) {
      w.refuse(refusals.localSearchPath);
    } else {
      const path = splitIdentifiers(value, ',');
      // An invalid list makes Postgres fail the call: nothing changes.
      if (path !== undefined && !w.ctx.body) w.facts.settings.push({ kind: 'search_path', value: path, position: null });
    }
  }
}

/** The name inside a string read as a reg* type: 'bob/x.t'::regclass reads table t of bob/x. */
export function regStringRef(w: Walker, type: string, text: string, need: Need, location: Json | undefined): void {
  // A number is an OID: nothing to resolve, and Postgres checks access to what it names.
  if (/^\s*\d+\s*$/.test(text)) return;
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
