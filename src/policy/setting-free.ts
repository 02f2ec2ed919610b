// Whether a statement can leave a session setting changed behind it. The REST API resets each
// reused session (RESET ALL) before the next request's statement; after a statement that
// provably changed nothing, that reset can be skipped (on a Citus coordinator it costs ≈ 60–130 µs
// of CPU per request).
//
// Conservative: only what is proven counts. A setting changes through SET, RESET, DISCARD or
// set_config, but also through any user code a statement runs: a function, a view, a
// row-level security policy, a trigger, a column default or check, a domain's check, a
// user-defined operator or cast. A repo's table may be any of these behind its name, so a
// statement naming anything in a repo is never setting-free; only Postgres' own catalogs and
// built-in functions that run no SQL are. Unqualified names are judged with the search path in
// decide.ts.
import type { StatementFacts } from './facts.js';

/** Schemas whose relations and objects are Postgres' own: reading them runs only built-in code. */
const BUILT_IN_SCHEMAS = new Set(['pg_catalog', 'information_schema']);

/**
 * Built-in functions that run no SQL and change no setting, by name (bare or `pg_catalog.`).
 * Anything not listed may: set_config obviously, query_to_xml and its kin run SQL text.
 */
const SETTING_FREE_FUNCTIONS = new Set([
  // server and session facts
  'now', 'clock_timestamp', 'statement_timestamp', 'transaction_timestamp', 'timeofday', 'version',
  'current_database', 'current_schema', 'current_schemas', 'current_setting', 'pg_backend_pid',
  'pg_postmaster_start_time', 'pg_conf_load_time', 'inet_server_addr', 'inet_server_port',
  'pg_is_in_recovery', 'pg_my_temp_schema', 'pg_is_other_temp_schema', 'pg_encoding_to_char',
  'pg_client_encoding', 'txid_current_snapshot', 'pg_current_snapshot',
  // catalog look-ups
  'format_type', 'pg_get_expr', 'pg_get_constraintdef', 'pg_get_indexdef', 'pg_get_viewdef',
  'pg_get_userbyid', 'pg_get_function_arguments', 'pg_get_function_result', 'pg_get_function_identity_arguments',
  'pg_table_is_visible', 'pg_type_is_visible', 'pg_function_is_visible', 'obj_description',
  'col_description', 'shobj_description', 'has_table_privilege', 'has_schema_privilege',
  'has_database_privilege', 'has_column_privilege', 'has_any_column_privilege', 'has_function_privilege',
  'pg_has_role', 'array_to_string', 'quote_ident', 'quote_literal', 'to_regclass', 'to_regtype',
  // aggregates, numbers, strings, times, arrays, JSON
  'count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'array_agg', 'string_agg',
  'json_agg', 'jsonb_agg', 'abs', 'round', 'ceil', 'ceiling', 'floor', 'trunc', 'mod', 'power',
  'sqrt', 'random', 'length', 'char_length', 'octet_length', 'lower', 'upper', 'initcap', 'trim',
  'btrim', 'ltrim', 'rtrim', 'substr', 'substring', 'position', 'strpos', 'replace', 'concat',
  'concat_ws', 'left', 'right', 'lpad', 'rpad', 'split_part', 'format', 'md5', 'to_char',
  'to_number', 'to_date', 'to_timestamp', 'date_trunc', 'date_part', 'extract', 'age',
  'make_date', 'make_timestamp', 'make_interval', 'generate_series', 'unnest', 'array_length',
  'cardinality', 'array_position', 'array_cat', 'array_append', 'array_prepend', 'coalesce',
  'nullif', 'greatest', 'least', 'gen_random_uuid', 'row_number', 'rank', 'dense_rank',
  'lag', 'lead', 'first_value', 'last_value', 'json_build_object', 'jsonb_build_object',
  'json_build_array', 'jsonb_build_array', 'to_json', 'to_jsonb', 'jsonb_pretty',
  'jsonb_typeof', 'json_typeof', 'pg_typeof', 'pg_column_size', 'pg_size_pretty',
]);

/**
 * Whether running `facts` cannot change a session setting, whatever the session's search path
 * (unqualified relations only as Postgres' own catalogs redirected to the service's views).
 */
export function isSettingFree(facts: StatementFacts): boolean {
  if (facts.kind !== 'SelectStmt' || facts.refusal !== null) return false;
  if (facts.settings.length > 0 || facts.bodies.length > 0 || facts.functionPaths.length > 0 || facts.channelSpans.length > 0) return false;
  const redirected = (name: string) => facts.catalog.some((c) => c.kind === 'relation' && c.schema === null && c.name === name);
  for (const ref of facts.refs) {
    if (ref.schema !== null ? !BUILT_IN_SCHEMAS.has(ref.schema) : ref.kind !== 'relation' || !redirected(ref.name)) return false;
  }
  return facts.functions.every((f) => SETTING_FREE_FUNCTIONS.has(f.startsWith('pg_catalog.') ? f.slice('pg_catalog.'.length) : f));
}

/** Schemas of a search path that hold no user's objects: `public` (where no user may create anything), the role-named one (never a repo), Postgres' own. */
const NO_USER_OBJECTS = new Set(['public', '$user', 'pg_catalog', 'information_schema', 'pg_temp']);

/**
 * Whether unqualified names (functions, types, operators the facts do not record) resolve only to
 * Postgres' own objects or the admin's on `path`: no repo on it.
 */
export function builtInPath(path: readonly string[]): boolean {
  return path.every((schema) => NO_USER_OBJECTS.has(schema));
}
