// The filtered catalog: views with the names of the system catalog relations, in two schemas of
// the service (`repobase_catalog` for pg_catalog, `repobase_information_schema` for
// information_schema), each showing only the rows of the world of the role that reads it.
// Control-plane migration 6 creates them; the policy redirects catalog references to them
// (`catalog-rewrite.ts`). The relation names stay the same, so implicit aliases (`pg_class.relname`,
// `tables.table_name`) keep working after the redirect.
//
// A user's world, computed at run time from `current_user` (a view's body sees the invoking role
// there, so one view and one cached rewrite serve every user):
// - the system schemas (everything initdb made: oid < 16384, FirstNormalObjectId) but pg_toast
//   (every user's TOAST tables, one per table with a long column: thousands of rows naming
//   nothing anyone queries), the session's own temporary schema;
// - schemas the role owns (its repos);
// - schemas granted to the role itself (a collaborator's repos): an ACL entry naming the role,
//   not PUBLIC — public repos grant USAGE to PUBLIC and are not "shared with" anyone;
// - schemas on the session's effective search_path (`current_schemas(true)`): the repo the
//   connection is for (database `<user>/<repo>` puts it on the path) and public repos the user
//   put there.
// Roles: the role itself, the users it shares repos with (owners of repos granted to it, grantees
// of its own repos) and the predefined `pg_*` roles.
//
// Cost: `visible_namespaces()` scans pg_namespace once per use in a query (a SETOF function in an
// uncorrelated `IN (SELECT …)` is run once and hashed); each view is a hash semi-join against
// it. The views are security barriers: a user's own (leaky) function in a WHERE clause is never
// evaluated on rows outside the user's world before the filter.
//
// Also `repobase_catalog.pg_notify`, the stand-in that keeps each user's channels their own
// (`channels.ts`).
//
// This list is the content of migrations 6 and 8: a change to it needs a new migration too (as 9
// and 11 are), which brings databases made before it to the same views.

/** The schema holding the filtered pg_catalog relations. */
export const CATALOG_SCHEMA = 'repobase_catalog';
/** The schema holding the filtered information_schema relations. */
export const INFORMATION_SCHEMA = 'repobase_information_schema';

const ns = `IN (SELECT ${CATALOG_SCHEMA}.visible_namespaces(pg_catalog.current_schemas(true)))`;
const rel = `IN (SELECT oid FROM ${CATALOG_SCHEMA}.pg_class)`;
const typ = `IN (SELECT oid FROM ${CATALOG_SCHEMA}.pg_type)`;
const proc = `IN (SELECT oid FROM ${CATALOG_SCHEMA}.pg_proc)`;
const role = `IN (SELECT ${CATALOG_SCHEMA}.visible_roles())`;
const nsName = `IN (SELECT ${CATALOG_SCHEMA}.visible_schema_names(pg_catalog.current_schemas(true)))`;
/** The views of the planner's statistics, by schema name. */
export const statsViews = ['pg_stats', 'pg_stats_ext', 'pg_stats_ext_exprs'];
const object = (classid: string, objid: string) => `(${objid} < 16384 OR (${classid}, ${objid}) IN (SELECT classid, objid FROM ${CATALOG_SCHEMA}.visible_objects(pg_catalog.current_schemas(true))))`;

/**
 * pg_catalog relations that can name another user's objects or roles → the filter of their view.
 * The rest (server-wide settings, statistics without names, the session's own prepared statements
 * and cursors, access methods, languages, casts, pg_locks' bare oids) reveal nothing of a tenant
 * and are left as they are.
 */
export const filteredCatalog: ReadonlyMap<string, string> = new Map([
  // Objects by namespace.
  ['pg_namespace', `oid ${ns}`],
  ['pg_class', `relnamespace ${ns}`],
  ['pg_type', `typnamespace ${ns}`],
  ['pg_proc', `pronamespace ${ns}`],
  ['pg_constraint', `connamespace ${ns}`],
  ['pg_operator', `oprnamespace ${ns}`],
  ['pg_collation', `collnamespace ${ns}`],
  ['pg_conversion', `connamespace ${ns}`],
  ['pg_opclass', `opcnamespace ${ns}`],
  ['pg_opfamily', `opfnamespace ${ns}`],
  ['pg_statistic_ext', `stxnamespace ${ns}`],
  ['pg_ts_config', `cfgnamespace ${ns}`],
  ['pg_ts_dict', `dictnamespace ${ns}`],
  ['pg_ts_parser', `prsnamespace ${ns}`],
  ['pg_ts_template', `tmplnamespace ${ns}`],
  ['pg_default_acl', `(defaclnamespace = 0 AND defaclrole ${role}) OR defaclnamespace ${ns}`],
  // The service's own (users cannot make event triggers): nothing to show, nothing for pg_dump.
  ['pg_event_trigger', 'false'],
  // Objects of relations, types and functions.
  ['pg_attribute', `attrelid ${rel}`],
  ['pg_attrdef', `adrelid ${rel}`],
  ['pg_index', `indrelid ${rel}`],
  ['pg_inherits', `inhrelid ${rel}`],
  ['pg_trigger', `tgrelid ${rel}`],
  ['pg_rewrite', `ev_class ${rel}`],
  ['pg_policy', `polrelid ${rel}`],
  ['pg_sequence', `seqrelid ${rel}`],
  ['pg_partitioned_table', `partrelid ${rel}`],
  ['pg_enum', `enumtypid ${typ}`],
  ['pg_range', `rngtypid ${typ}`],
  ['pg_aggregate', `aggfnoid::oid ${proc}`],
  // Anything, by (catalog, oid).
  ['pg_description', object('classoid', 'objoid')],
  ['pg_depend', `${object('classid', 'objid')} AND ${object('refclassid', 'refobjid')}`],
  ['pg_shdepend', `dbid = 0 OR ${object('classid', 'objid')}`],
  // Roles.
  ['pg_roles', `oid ${role}`],
  ['pg_user', `usesysid ${role}`],
  ['pg_group', `grosysid ${role}`],
  ['pg_auth_members', `roleid ${role} AND member ${role}`],
  ['pg_stat_activity', `usesysid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user)`],
  // Views by schema name.
  ['pg_tables', `schemaname ${nsName}`],
  ['pg_views', `schemaname ${nsName}`],
  ['pg_matviews', `schemaname ${nsName}`],
  ['pg_indexes', `schemaname ${nsName}`],
  ['pg_sequences', `schemaname ${nsName}`],
  ['pg_policies', `schemaname ${nsName}`],
  ['pg_rules', `schemaname ${nsName}`],
  // The planner's statistics of the system catalogs' columns list values of everybody's rows
  // (relation names, function source): only those of the user's own world are shown (migration 11).
  ...statsViews.map((name): [string, string] => [name, `schemaname ${nsName} AND schemaname <> 'pg_catalog'`]),
  ['pg_publication_tables', `schemaname ${nsName}`],
  // Statistics by relation or function.
  ...['all', 'user', 'sys'].flatMap((which): Array<[string, string]> => [
    [`pg_stat_${which}_tables`, `relid ${rel}`],
    [`pg_stat_xact_${which}_tables`, `relid ${rel}`],
    [`pg_stat_${which}_indexes`, `relid ${rel}`],
    [`pg_statio_${which}_tables`, `relid ${rel}`],
    [`pg_statio_${which}_indexes`, `relid ${rel}`],
    [`pg_statio_${which}_sequences`, `relid ${rel}`],
  ]),
  ['pg_stat_user_functions', `funcid ${proc}`],
  ['pg_stat_xact_user_functions', `funcid ${proc}`],
  ...['analyze', 'cluster', 'create_index', 'vacuum', 'copy'].map((what): [string, string] => [`pg_stat_progress_${what}`, `relid ${rel}`]),
]);

/**
 * A DO block making a filtered view of each of `names` (pg_catalog relation → filter): every column
 * as it is, but pseudo-typed ones (anyarray: pg_attribute.attmissingval, pg_stats' value lists),
 * which a view cannot have: those become their text form. `tableoid` (migration 8): over a
 * catalog table, its system column `tableoid` follows the others, as pg_dump reads it. `pid`
 * (migration 9): the expression (a format string of the column's name) that `pid` and
 * `leader_pid` columns become.
 */
export function viewsSql(names: Array<[string, string]>, how: { replace: boolean; tableoid: boolean; pid?: string }): string {
  const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
  // Migration 9: a column naming a backend by its process id shows the session's own as pg_backend_pid() does.
  const pid = how.pid === undefined ? '' : `WHEN a.attname IN ('pid', 'leader_pid') THEN format(${literal(how.pid)}, a.attname) `;
  return `
    DO $do$
    DECLARE
      r record;
    BEGIN
      FOR r IN
        SELECT v.name, v.filter, c.relkind,
               (SELECT string_agg(CASE ${pid}WHEN t.typtype = 'p' THEN format('%1$I::text AS %1$I', a.attname) ELSE format('%I', a.attname) END, ', ' ORDER BY a.attnum)
                  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
          FROM unnest(ARRAY[${names.map(([name]) => literal(name)).join(', ')}]::text[],
                      ARRAY[${names.map(([, filter]) => literal(filter)).join(', ')}]::text[]) WITH ORDINALITY AS v(name, filter, n)
          JOIN pg_catalog.pg_class c ON c.oid = to_regclass(format('pg_catalog.%I', v.name))
         WHERE ${how.tableoid ? "c.relkind = 'r'" : 'true'}
         ORDER BY v.n
      LOOP
        EXECUTE format('CREATE ${how.replace ? 'OR REPLACE ' : ''}VIEW ${CATALOG_SCHEMA}.%I WITH (security_barrier) AS SELECT %s${how.tableoid ? ', tableoid' : ''} FROM pg_catalog.%I WHERE %s', r.name, r.columns, r.name, r.filter);
      END LOOP;
    END
    $do$;`;
}

/**
 * `visible_roles()`: the role, the users it shares repos with (both ways), the predefined pg_*
 * roles; since migration 8 also the roles that own the system (`systemOwners`).
 */
function visibleRolesSql(how: { replace: boolean; systemOwners: boolean }): string {
  const c = CATALOG_SCHEMA;
  return `CREATE ${how.replace ? 'OR REPLACE ' : ''}FUNCTION ${c}.visible_roles() RETURNS SETOF oid
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
      WITH me AS (SELECT oid FROM pg_roles WHERE rolname = current_user)
      SELECT me.oid FROM me
      UNION
      SELECT r.oid FROM pg_roles r WHERE r.oid < 16384 AND ${how.systemOwners ? "(r.rolname LIKE 'pg\\_%' OR r.oid = 10)" : "r.rolname LIKE 'pg\\_%'"}${how.systemOwners ? `
      UNION
      SELECT datdba FROM pg_database WHERE datname = current_database()` : ''}
      UNION
      SELECT n.nspowner FROM pg_namespace n, me
       WHERE n.nspowner <> me.oid AND aclcontains(n.nspacl, makeaclitem(me.oid, n.nspowner, 'USAGE', false))
      UNION
      SELECT a.grantee FROM pg_namespace n, me, aclexplode(n.nspacl) a
       WHERE n.nspowner = me.oid AND a.grantee <> 0
    $fn$;`;
}

/**
 * The SQL of migration 8, for pg_dump: the filtered views over catalog tables get their
 * `tableoid`, and the roles that own the system (the bootstrap superuser, the database's owner)
 * are in everybody's world: every system schema, catalog and built-in function names one of them
 * as its owner, and pg_dump stops at an owner it cannot name.
 */
export function catalogTableoidSql(): string {
  const c = CATALOG_SCHEMA;
  return `
    ${viewsSql([...filteredCatalog], { replace: true, tableoid: true })}

    ${visibleRolesSql({ replace: true, systemOwners: true })}`;
}

/** The SQL of migration 11: the statistics views without the system catalogs' value lists. */
export function catalogStatsSql(): string {
  return viewsSql(
    statsViews.map((name): [string, string] => [name, filteredCatalog.get(name)!]),
    { replace: true, tableoid: false },
  );
}

/** The SQL of migration 6: the two schemas, the visibility functions, the views. */
export function catalogViewsSql(): string {
  const c = CATALOG_SCHEMA;
  const views = (names: Array<[string, string]>) => viewsSql(names, { replace: false, tableoid: false });
  const all = [...filteredCatalog];
  return `
    CREATE SCHEMA ${c};
    CREATE SCHEMA ${INFORMATION_SCHEMA};
    GRANT USAGE ON SCHEMA ${c}, ${INFORMATION_SCHEMA} TO PUBLIC;

    -- The schemas of the reading role's world (see src/policy/catalog-views.ts). Functions with a
    -- pinned search_path, so nothing a user creates stands in for a catalog or an operator.
    -- The session's path is an argument: inside the function its own SET clause is in force.
    CREATE FUNCTION ${c}.visible_namespaces(path name[]) RETURNS SETOF oid
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
      -- Per row only comparisons: a repo nobody was granted has no ACL (NULL), so the ACL test
      -- (which builds an aclitem) runs only for shared and public ones.
      WITH me AS (SELECT oid, pg_my_temp_schema() AS temp FROM pg_roles WHERE rolname = current_user)
      SELECT n.oid FROM pg_namespace n, me
       WHERE (n.oid < 16384 AND n.nspname <> 'pg_toast')
          OR n.nspowner = me.oid
          OR (n.nspacl IS NOT NULL AND aclcontains(n.nspacl, makeaclitem(me.oid, n.nspowner, 'USAGE', false)))
          OR n.nspname = ANY (path)
          OR n.oid = me.temp
    $fn$;

    CREATE FUNCTION ${c}.visible_schema_names(path name[]) RETURNS SETOF name
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
      SELECT nspname FROM pg_namespace WHERE oid IN (SELECT ${c}.visible_namespaces(path))
    $fn$;

    -- The role, the users it shares repos with (both ways), the predefined pg_* roles.
    ${visibleRolesSql({ replace: false, systemOwners: false })}

    ${views(all.slice(0, 2))}

    -- Objects of the world by (catalog, oid), for pg_description and pg_depend.
    CREATE FUNCTION ${c}.visible_objects(path name[]) RETURNS TABLE (classid oid, objid oid)
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
      WITH ns AS MATERIALIZED (SELECT ${c}.visible_namespaces(path) AS oid),
           rel AS MATERIALIZED (SELECT oid FROM pg_class WHERE relnamespace IN (SELECT oid FROM ns))
      SELECT 'pg_namespace'::regclass::oid, oid FROM ns
      UNION ALL SELECT 'pg_class'::regclass::oid, oid FROM rel
      UNION ALL SELECT 'pg_type'::regclass::oid, oid FROM pg_type WHERE typnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_proc'::regclass::oid, oid FROM pg_proc WHERE pronamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_constraint'::regclass::oid, oid FROM pg_constraint WHERE connamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_operator'::regclass::oid, oid FROM pg_operator WHERE oprnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_collation'::regclass::oid, oid FROM pg_collation WHERE collnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, oid FROM pg_statistic_ext WHERE stxnamespace IN (SELECT oid FROM ns)
      UNION ALL SELECT 'pg_trigger'::regclass::oid, oid FROM pg_trigger WHERE tgrelid IN (SELECT oid FROM rel)
      UNION ALL SELECT 'pg_rewrite'::regclass::oid, oid FROM pg_rewrite WHERE ev_class IN (SELECT oid FROM rel)
      UNION ALL SELECT 'pg_attrdef'::regclass::oid, oid FROM pg_attrdef WHERE adrelid IN (SELECT oid FROM rel)
      UNION ALL SELECT 'pg_policy'::regclass::oid, oid FROM pg_policy WHERE polrelid IN (SELECT oid FROM rel)
      UNION ALL SELECT 'pg_extension'::regclass::oid, oid FROM pg_extension
    $fn$;

    ${views(all.slice(2))}

    -- information_schema: every relation, filtered on each of its schema-name columns (a NULL
    -- there names nothing). information_schema already hides what the role has no privilege on;
    -- this adds the public repos that are not on the session's path.
    DO $do$
    DECLARE
      r record;
    BEGIN
      FOR r IN
        SELECT c.relname,
               string_agg(format('(%1$I IS NULL OR %1$I::name IN (SELECT ${c}.visible_schema_names(pg_catalog.current_schemas(true))))', a.attname), ' AND ' ORDER BY a.attnum) FILTER (WHERE a.attname IS NOT NULL) AS filter
          FROM pg_catalog.pg_class c
          LEFT JOIN pg_catalog.pg_attribute a
            ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
           AND (a.attname LIKE '%schema' OR a.attname LIKE '%schema_name')
         WHERE c.relnamespace = 'information_schema'::regnamespace AND c.relkind IN ('r', 'v')
         GROUP BY c.relname
      LOOP
        EXECUTE format('CREATE VIEW ${INFORMATION_SCHEMA}.%I WITH (security_barrier) AS SELECT * FROM information_schema.%I WHERE %s',
                       r.relname, r.relname, coalesce(r.filter, 'true'));
      END LOOP;
    END
    $do$;
    GRANT SELECT ON ALL TABLES IN SCHEMA ${c}, ${INFORMATION_SCHEMA} TO PUBLIC;

    -- pg_notify in the caller's namespace (src/policy/channels.ts): top-level calls are
    -- redirected here. A name already in it ("alice/news") is the same channel.
    CREATE FUNCTION ${c}.pg_notify(channel text, payload text) RETURNS void
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
      SELECT pg_notify(CASE WHEN starts_with(channel, current_user || '/') THEN channel ELSE current_user || '/' || channel END, payload)
    $fn$;
  `;
}
