// Every function of pg_catalog a user's role can execute, in one of three classes:
// - plain: it takes no object of anybody's (string functions, math, dates, oid arithmetic…);
// - checked: it takes an object (an oid, a reg* value or a name as text) or answers with one. A
//   call that names the object as a constant string is checked here like any other name; any
//   other call is redirected to the wrapper of the same name in `repobase_catalog`, which answers
//   as Postgres answers for a missing object when that object lies in a schema the caller cannot
//   see (the rule of the filtered catalog views, `catalog-views.ts`), and else calls the original
//   (`catalog-wrappers.ts` makes the wrappers from this table);
// - refused: 42501 with a hint (type input/output functions, validators, Postgres' own upgrade
//   helpers, other sessions' activity, SQL or files as text).
// A name in none of them is not a pg_catalog function this policy knows: `pg_catalog.f(…)` is
// refused, an unqualified `f(…)` is taken for the user's own function (the role wall guards it).
// test/integration/catalog-functions.test.ts checks this table against pg_proc of the running
// Postgres, so a function a new Postgres version adds fails the test until it is classified.
import { SqlState } from '../shared/errors.js';
import type { Need, Refusal } from './facts.js';
import { plainFunctionNames, typeIoFunctionNames } from './catalog-function-names.js';
import { citusFunctionRefusal } from './citus.js';
import { refusals } from './refusals.js';

/** What an object argument (or result) is: the catalog it lives in, by how its schema is found. */
export type ObjectKind =
  | 'class'
  | 'type'
  | 'proc'
  | 'operator'
  | 'namespace'
  | 'role'
  | 'collation'
  | 'conversion'
  | 'opclass'
  | 'opfamily'
  | 'statistics'
  | 'ts_config'
  | 'ts_dict'
  | 'ts_parser'
  | 'ts_template'
  | 'constraint'
  | 'trigger'
  | 'rule'
  /** Any object by (catalog oid, object oid), or by object oid alone. */
  | 'object'
  /** A shared object (role, database, tablespace) with its catalog's name beside it. */
  | 'shared'
  /** Every type of an oidvector. */
  | 'types'
  /** An object of the whole server (database, language, tablespace…) or a number naming nothing by itself: nothing to check. */
  | 'server';

export interface ObjectArg {
  /** 0-based argument index. */
  at: number;
  kind: ObjectKind;
  /** The access a constant name there needs (default read). */
  need?: Need;
  /** A text or name argument there is the object's name (`has_table_privilege('t', …)`). */
  byName?: boolean;
  /** `object`: the argument holding the catalog's oid; `shared`/`object`: or its name. */
  classAt?: number;
  catalogNameAt?: number;
}

export interface CheckedFunction {
  /** Object arguments by the call's argument count. */
  args: Readonly<Record<number, readonly ObjectArg[]>>;
  /** The kind of object its result names: shown only when visible. */
  result?: ObjectKind;
  /**
   * SQL of the answer for an object the caller cannot see, where Postgres' answer for a missing
   * one is not NULL (`$1`… are the arguments).
   */
  missing?: string;
  /** Postgres raises "could not open relation with OID" for a missing relation: so does the stand-in. */
  raises?: boolean;
  /**
   * An object named as text outside the caller's world is answered as a missing schema's
   * ("schema … does not exist"), or with NULL where Postgres answers a missing name so (to_regclass).
   */
  nameMissing?: 'error' | 'null';
}

/** The reg* type whose text input resolves an object of this kind (a constant name is checked statically). */
export const regTypeOf: Partial<Record<ObjectKind, string>> = {
  class: 'regclass',
  type: 'regtype',
  proc: 'regprocedure',
  operator: 'regoperator',
  namespace: 'regnamespace',
  collation: 'regcollation',
  ts_config: 'regconfig',
  ts_dict: 'regdictionary',
};

/** reg* types and the kind of object they name. */
export const regTypes: ReadonlyMap<string, ObjectKind> = new Map([
  ['regclass', 'class'],
  ['regtype', 'type'],
  ['regproc', 'proc'],
  ['regprocedure', 'proc'],
  ['regoper', 'operator'],
  ['regoperator', 'operator'],
  ['regnamespace', 'namespace'],
  ['regrole', 'role'],
  ['regcollation', 'collation'],
  ['regconfig', 'ts_config'],
  ['regdictionary', 'ts_dict'],
]);

const one = (kind: ObjectKind, ...counts: number[]): CheckedFunction => ({
  args: Object.fromEntries(counts.map((n) => [n, [{ at: 0, kind }]])),
});
const named = (kind: ObjectKind, ...counts: number[]): CheckedFunction => ({
  args: Object.fromEntries(counts.map((n) => [n, [{ at: 0, kind, byName: true }]])),
});
/** to_regclass(text) and the like: the name is checked when constant, the answer always. */
const resolver = (kind: ObjectKind): CheckedFunction => ({ args: { 1: [{ at: 0, kind, byName: true }] }, result: kind, nameMissing: 'null' });
/** has_X_privilege([role,] object, privilege). */
const privilege = (kind: ObjectKind, counts: [number, number] = [2, 3]): CheckedFunction => ({
  args: {
    [counts[0]]: [{ at: 0, kind, byName: true }],
    [counts[1]]: [{ at: 0, kind: 'role', byName: true }, { at: 1, kind, byName: true }],
  },
});
/** has_X_privilege on objects of the whole server (databases, languages…): only the role is checked. */
const serverPrivilege: CheckedFunction = {
  args: { 2: [{ at: 0, kind: 'server' }], 3: [{ at: 0, kind: 'role', byName: true }, { at: 1, kind: 'server' }] },
};
/** Text search functions taking a configuration first when they take one. */
const textSearch = (...counts: number[]): CheckedFunction => one('ts_config', ...counts);

const relationStats = [
  'analyze_count', 'autoanalyze_count', 'autovacuum_count', 'blocks_fetched', 'blocks_hit', 'dead_tuples',
  'ins_since_vacuum', 'last_analyze_time', 'last_autoanalyze_time', 'last_autovacuum_time', 'last_vacuum_time',
  'lastscan', 'live_tuples', 'mod_since_analyze', 'numscans', 'tuples_deleted', 'tuples_fetched',
  'tuples_hot_updated', 'tuples_inserted', 'tuples_newpage_updated', 'tuples_returned', 'tuples_updated',
  'vacuum_count', 'xact_blocks_fetched', 'xact_blocks_hit', 'xact_numscans', 'xact_tuples_deleted',
  'xact_tuples_fetched', 'xact_tuples_hot_updated', 'xact_tuples_inserted', 'xact_tuples_newpage_updated',
  'xact_tuples_returned', 'xact_tuples_updated',
];
const functionStats = ['function_calls', 'function_self_time', 'function_total_time', 'xact_function_calls', 'xact_function_self_time', 'xact_function_total_time'];
const visibilityTests: Array<[string, ObjectKind]> = [
  ['pg_table_is_visible', 'class'], ['pg_type_is_visible', 'type'], ['pg_function_is_visible', 'proc'],
  ['pg_operator_is_visible', 'operator'], ['pg_opclass_is_visible', 'opclass'], ['pg_opfamily_is_visible', 'opfamily'],
  ['pg_collation_is_visible', 'collation'], ['pg_conversion_is_visible', 'conversion'],
  ['pg_statistics_obj_is_visible', 'statistics'], ['pg_ts_config_is_visible', 'ts_config'],
  ['pg_ts_dict_is_visible', 'ts_dict'], ['pg_ts_parser_is_visible', 'ts_parser'],
  ['pg_ts_template_is_visible', 'ts_template'], ['pg_is_other_temp_schema', 'namespace'],
];
const relationFunctions: Array<[string, number[]]> = [
  ['pg_relation_size', [1, 2]], ['pg_total_relation_size', [1]], ['pg_table_size', [1]], ['pg_indexes_size', [1]],
  ['pg_relation_filenode', [1]], ['pg_relation_filepath', [1]], ['pg_relation_is_publishable', [1]],
  ['pg_relation_is_updatable', [2]], ['pg_column_is_updatable', [3]], ['pg_index_has_property', [2]],
  ['pg_index_column_has_property', [3]], ['pg_partition_tree', [1]], ['pg_partition_ancestors', [1]],
  ['pg_get_indexdef', [1, 3]], ['pg_get_partkeydef', [1]], ['pg_get_partition_constraintdef', [1]],
  ['col_description', [2]], ['pg_sequence_last_value', [1]], ['pg_sequence_parameters', [1]],
  ['brin_summarize_new_values', [1]], ['brin_summarize_range', [2]], ['brin_desummarize_range', [2]],
];
/** Index maintenance: Postgres opens the relation first, and cannot for a missing one. */
const indexMaintenance: Array<[string, number[]]> = [
  ['brin_summarize_new_values', [1]], ['brin_summarize_range', [2]], ['brin_desummarize_range', [2]],
  ['gin_clean_pending_list', [1]], ['pg_get_replica_identity_index', [1]],
];

/** Checked functions by name. */
export const checkedFunctions: ReadonlyMap<string, CheckedFunction> = new Map<string, CheckedFunction>([
  // Names and definitions.
  ['format_type', { ...one('type', 2), missing: "'???'" }],
  // Each type as format_type shows it ('???' for one outside the caller's world).
  ['oidvectortypes', { ...one('types', 1), missing: "(SELECT coalesce(string_agg(repobase_catalog.format_type(t, NULL), ', ' ORDER BY n), '') FROM unnest($1::oid[]) WITH ORDINALITY AS u(t, n))" }],
  ['pg_get_userbyid', { ...one('role', 1), missing: "'unknown (OID=' || $1 || ')'" }],
  ['pg_get_viewdef', named('class', 1, 2)],
  ['pg_get_constraintdef', one('constraint', 1, 2)],
  ['pg_get_triggerdef', one('trigger', 1, 2)],
  ['pg_get_ruledef', one('rule', 1, 2)],
  // With no relation (oid 0) Postgres refuses an expression with columns: a missing one reads NULL.
  ['pg_get_expr', { args: { 2: [{ at: 1, kind: 'class' }], 3: [{ at: 1, kind: 'class' }] }, missing: 'NULL' }],
  ['pg_get_functiondef', one('proc', 1)],
  ['pg_get_function_arguments', one('proc', 1)],
  ['pg_get_function_identity_arguments', one('proc', 1)],
  ['pg_get_function_result', one('proc', 1)],
  ['pg_get_function_sqlbody', one('proc', 1)],
  ['pg_get_function_arg_default', one('proc', 2)],
  ['pg_get_statisticsobjdef', one('statistics', 1)],
  ['pg_get_statisticsobjdef_columns', one('statistics', 1)],
  ['pg_get_statisticsobjdef_expressions', one('statistics', 1)],
  ['pg_get_serial_sequence', named('class', 2)],
  ['pg_describe_object', { args: { 3: [{ at: 1, kind: 'object', classAt: 0 }] } }],
  ['pg_identify_object', { args: { 3: [{ at: 1, kind: 'object', classAt: 0 }] } }],
  ['pg_identify_object_as_address', { args: { 3: [{ at: 1, kind: 'object', classAt: 0 }] } }],
  ['obj_description', { args: { 1: [{ at: 0, kind: 'object' }], 2: [{ at: 0, kind: 'object', catalogNameAt: 1 }] } }],
  ['shobj_description', { args: { 2: [{ at: 0, kind: 'shared', catalogNameAt: 1 }] } }],
  ...relationFunctions.map(([name, counts]): [string, CheckedFunction] => [name, one('class', ...counts)]),
  ...indexMaintenance.map(([name, counts]): [string, CheckedFunction] => [name, { ...one('class', ...counts), raises: true }]),
  ['pg_filenode_relation', { args: { 2: [{ at: 0, kind: 'server' }, { at: 1, kind: 'server' }] }, result: 'class' }],
  ['pg_partition_root', { ...one('class', 1), result: 'class' }],
  ['row_security_active', named('class', 1)],
  ['pg_collation_actual_version', one('collation', 1)],
  ...visibilityTests.map(([name, kind]): [string, CheckedFunction] => [name, one(kind, 1)]),
  // Sequences: a sequence that cannot be seen cannot be opened.
  ['nextval', { args: { 1: [{ at: 0, kind: 'class', need: 'write' }] }, raises: true }],
  ['setval', { args: { 2: [{ at: 0, kind: 'class', need: 'write' }], 3: [{ at: 0, kind: 'class', need: 'write' }] }, raises: true }],
  ['currval', { ...one('class', 1), raises: true }],
  // Statistics of one relation or function.
  ...relationStats.map((s): [string, CheckedFunction] => [`pg_stat_get_${s}`, one('class', 1)]),
  ...functionStats.map((s): [string, CheckedFunction] => [`pg_stat_get_${s}`, one('proc', 1)]),
  // Privileges and roles.
  ['has_table_privilege', privilege('class')],
  ['has_sequence_privilege', privilege('class')],
  ['has_any_column_privilege', privilege('class')],
  ['has_column_privilege', privilege('class', [3, 4])],
  ['has_function_privilege', privilege('proc')],
  ['has_schema_privilege', privilege('namespace')],
  ['has_type_privilege', privilege('type')],
  ['has_database_privilege', serverPrivilege],
  ['has_foreign_data_wrapper_privilege', serverPrivilege],
  ['has_language_privilege', serverPrivilege],
  ['has_server_privilege', serverPrivilege],
  ['has_tablespace_privilege', serverPrivilege],
  ['has_parameter_privilege', serverPrivilege],
  ['pg_has_role', { args: { 2: [{ at: 0, kind: 'role', byName: true }], 3: [{ at: 0, kind: 'role', byName: true }, { at: 1, kind: 'role', byName: true }] } }],
  // An aclitem shows a missing role by its oid, which a role that exists cannot be made to do: NULL.
  ['acldefault', { args: { 2: [{ at: 1, kind: 'role' }] }, missing: 'NULL' }],
  ['makeaclitem', { args: { 4: [{ at: 0, kind: 'role' }, { at: 1, kind: 'role' }] }, missing: 'NULL' }],
  // Names to objects.
  ['to_regclass', resolver('class')],
  ['regclass', { ...named('class', 1), result: 'class' }],
  ['to_regnamespace', resolver('namespace')],
  ['to_regproc', resolver('proc')],
  ['to_regprocedure', resolver('proc')],
  ['to_regoper', resolver('operator')],
  ['to_regoperator', resolver('operator')],
  ['to_regtype', resolver('type')],
  ['to_regtypemod', { ...named('type', 1), nameMissing: 'null' }],
  ['to_regcollation', resolver('collation')],
  ['to_regrole', resolver('role')],
  ['pg_basetype', { ...one('type', 1), result: 'type' }],
  ['pg_input_is_valid', { args: { 2: [{ at: 1, kind: 'type', byName: true }] } }],
  ['pg_input_error_info', { args: { 2: [{ at: 1, kind: 'type', byName: true }] } }],
  // Text search with a configuration, dictionary or parser of somebody's.
  ['to_tsvector', textSearch(2)],
  ['json_to_tsvector', textSearch(3)],
  ['jsonb_to_tsvector', textSearch(3)],
  ['to_tsquery', textSearch(2)],
  ['plainto_tsquery', textSearch(2)],
  ['phraseto_tsquery', textSearch(2)],
  ['websearch_to_tsquery', textSearch(2)],
  ['ts_headline', textSearch(3, 4)],
  ['ts_debug', textSearch(2)],
  ['ts_lexize', one('ts_dict', 2)],
  ['ts_parse', named('ts_parser', 2)],
  ['ts_token_type', named('ts_parser', 1)],
  ['get_current_ts_config', { args: {}, result: 'ts_config' }],
]);

const denied = SqlState.InsufficientPrivilege;

const internalFunctions = new Set([
  'plpgsql_validator', 'fmgr_c_validator', 'fmgr_internal_validator', 'fmgr_sql_validator', 'postgresql_fdw_validator',
  'amvalidate', 'btequalimage', 'btvarstrequalimage', 'pg_extension_config_dump', 'pg_import_system_collations',
  'pg_nextoid', 'satisfies_hash_partition', 'pg_get_object_address', 'currtid2',
]);
const activityFunctions = new Set(['pg_stat_get_activity', 'pg_stat_get_progress_info']);
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
  'pg_read_file', 'pg_read_binary_file', 'pg_read_file_old', 'pg_ls_dir', 'pg_stat_file', 'lo_import', 'lo_export',
  'pg_ls_logdir', 'pg_ls_waldir', 'pg_ls_tmpdir', 'pg_ls_archive_statusdir', 'pg_ls_logicalsnapdir',
  'pg_ls_logicalmapdir', 'pg_ls_replslotdir', 'pg_current_logfile', 'pg_file_write', 'pg_file_rename',
  'pg_file_unlink', 'pg_logdir_ls',
]);

/** The refusal of a built-in function by name, or undefined when it is not refused. */
export function functionRefusal(name: string): Refusal | undefined {
  if (typeIoFunctionNames.has(name)) return refusals.typeIoFunction(name);
  if (internalFunctions.has(name) || name.startsWith('binary_upgrade_')) return refusals.internalFunction(name);
  if (activityFunctions.has(name) || name.startsWith('pg_stat_get_backend_')) return refusals.activityFunction(name);
  if (sqlTextFunctions.has(name) || name.startsWith('dblink')) return refusals.sqlTextFunction(name);
  if (fileFunctions.has(name)) return refusals.fileFunction(name);
  return citusFunctionRefusal(name);
}

export type FunctionClass =
  | { kind: 'plain' }
  | { kind: 'checked'; spec: CheckedFunction }
  | { kind: 'refused'; refusal: Refusal };

const plain: FunctionClass = { kind: 'plain' };
const classes = new Map<string, FunctionClass>();

/** How a call of the pg_catalog function `name` is treated; undefined for a name this policy does not know. */
export function classifyFunction(name: string): FunctionClass | undefined {
  let c = classes.get(name);
  if (c !== undefined) return c;
  const spec = checkedFunctions.get(name);
  const refusal = spec === undefined ? functionRefusal(name) : undefined;
  if (spec !== undefined) c = { kind: 'checked', spec };
  else if (refusal !== undefined) c = { kind: 'refused', refusal };
  else if (plainFunctionNames.has(name)) c = plain;
  else return undefined;
  classes.set(name, c);
  return c;
}

/** A call of `pg_catalog.name` for a name in no class. */
export function unclassifiedRefusal(name: string): Refusal {
  return {
    code: denied,
    message: `pg_catalog.${name}() is not allowed: repobase has not classified it`,
    hint: 'repobase lets through the catalog functions it knows to keep other users\' objects private; ask the operator to classify this one',
  };
}
