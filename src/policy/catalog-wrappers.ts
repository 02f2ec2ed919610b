// The stand-ins of the checked catalog functions (`catalog-functions.ts`) and of reg* casts, in
// the filtered catalog's schema: control-plane migration 7 creates them.
//
// Each stand-in has the name, arguments (with their defaults), result and volatility of the
// original. It answers as Postgres does for a missing object when an object argument lies in a
// schema outside the caller's world (the rule of the filtered views: the system schemas, the
// caller's repos, repos shared with the caller, the schemas on the session's path, its temporary
// schema), and otherwise calls the original. An oid that names nothing passes through, so the
// original gives its own answer for it; so does a name that resolves to nothing. A reg* value of
// an object outside the caller's world reads as NULL: Postgres prints the bare oid for an oid that
// names nothing, but a value of the same type cannot print differently for one role than for
// another without a type output function of the service's own, written in C.
//
// The bodies are SQL-standard (`BEGIN ATOMIC`): parsed and bound when created, so nothing a user
// creates or puts on the search_path can stand in for what they call; and SECURITY INVOKER,
// without SET clauses, so the simple ones are inlined into the caller's query by the planner.
import { CATALOG_SCHEMA } from './catalog-views.js';
import { checkedFunctions, regTypes, type ObjectKind } from './catalog-functions.js';
import type { Refusal } from './facts.js';
import { refusals } from './refusals.js';

const c = CATALOG_SCHEMA;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Catalogs whose rows carry their schema, and that column. */
const byNamespace: Array<[ObjectKind, string, string]> = [
  ['class', 'pg_class', 'relnamespace'],
  ['type', 'pg_type', 'typnamespace'],
  ['proc', 'pg_proc', 'pronamespace'],
  ['operator', 'pg_operator', 'oprnamespace'],
  ['collation', 'pg_collation', 'collnamespace'],
  ['conversion', 'pg_conversion', 'connamespace'],
  ['opclass', 'pg_opclass', 'opcnamespace'],
  ['opfamily', 'pg_opfamily', 'opfnamespace'],
  ['statistics', 'pg_statistic_ext', 'stxnamespace'],
  ['ts_config', 'pg_ts_config', 'cfgnamespace'],
  ['ts_dict', 'pg_ts_dict', 'dictnamespace'],
  ['ts_parser', 'pg_ts_parser', 'prsnamespace'],
  ['ts_template', 'pg_ts_template', 'tmplnamespace'],
  ['constraint', 'pg_constraint', 'connamespace'],
];
/** Catalogs whose rows belong to a relation, and that column. */
const byRelation: Array<[ObjectKind | null, string, string]> = [
  ['trigger', 'pg_trigger', 'tgrelid'],
  ['rule', 'pg_rewrite', 'ev_class'],
  [null, 'pg_attrdef', 'adrelid'],
  [null, 'pg_policy', 'polrelid'],
];
/** Server-wide catalogs: their objects belong to no tenant. */
const serverWide = ['pg_database', 'pg_tablespace', 'pg_am', 'pg_language', 'pg_extension', 'pg_foreign_data_wrapper'];

const fn = (name: string, args: string, returns: string, body: string, volatility = 'STABLE') => `
    CREATE FUNCTION ${c}.${name}(${args}) RETURNS ${returns} LANGUAGE sql ${volatility} PARALLEL SAFE
    BEGIN ATOMIC
      ${body};
    END;`;

/**
 * A visibility test in PL/pgSQL: its plans are kept for the session (a SQL function's would be
 * made again in every query that calls it, which cost psql's \d 3x its time), and its pinned
 * search_path keeps a user's operators out. The caller's path comes as an argument: inside, the
 * function's own is in force.
 */
const test = (name: string, args: string, body: string) => `
    CREATE FUNCTION ${c}.${name}(${args}) RETURNS boolean LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    ${body}
    $fn$;`;

/** An oid below this was made by initdb: the system's, in everybody's world (roles included). */
export const FIRST_NORMAL_OID = 16384;

/**
 * `visible_<kind>(oid, path)`: true for an object of the caller's world, false outside it, NULL
 * for no object. `path` is the session's `current_schemas(true)`.
 */
function visibilityFunctions(): string {
  const namespace = test('visible_namespace', 'n oid, path name[]', `
    DECLARE
      s record;
      me oid;
    BEGIN
      IF n < ${FIRST_NORMAL_OID} THEN RETURN n <> 'pg_toast'::regnamespace; END IF;
      SELECT nspname, nspowner, nspacl INTO s FROM pg_namespace WHERE oid = n;
      IF NOT FOUND THEN RETURN NULL; END IF;
      me := to_regrole(current_user::text);
      RETURN s.nspowner = me
          OR n = pg_my_temp_schema()
          OR s.nspname = ANY (path)
          -- Only a repo shared with somebody has an ACL: the aclitem is built for those alone.
          OR (s.nspacl IS NOT NULL AND aclcontains(s.nspacl, makeaclitem(me, s.nspowner, 'USAGE', false)));
    END`);
  const through = (kind: string, catalog: string, column: string, of: string) => test(`visible_${kind}`, 'o oid, path name[]', `
    DECLARE
      x oid;
    BEGIN
      IF o < ${FIRST_NORMAL_OID} THEN RETURN true; END IF;
      SELECT ${column} INTO x FROM ${catalog} WHERE oid = o;
      IF NOT FOUND THEN RETURN NULL; END IF;
      RETURN ${c}.visible_${of}(x, path);
    END`);
  const kinds = byNamespace.map(([kind, catalog, column]) => through(kind, catalog, column, 'namespace'));
  const owned = byRelation.filter((r): r is [ObjectKind, string, string] => r[0] !== null).map(([kind, catalog, column]) => through(kind, catalog, column, 'class'));
  // The caller, PUBLIC (0), the system's roles, and those it shares repos with (as the filtered
  // pg_roles): the common answers first, the set of sharing partners last.
  const role = test('visible_role', 'o oid, path name[]', `
    DECLARE
      r name;
    BEGIN
      IF o < ${FIRST_NORMAL_OID} THEN RETURN true; END IF;
      SELECT rolname INTO r FROM pg_roles WHERE oid = o;
      IF NOT FOUND THEN RETURN NULL; END IF;
      RETURN r = current_user
          OR o = (SELECT datdba FROM pg_database WHERE datname = current_database())
          OR o IN (SELECT ${c}.visible_roles());
    END`);
  const anyObject = [...byNamespace.map(([kind]) => kind), 'trigger', 'rule', 'namespace', 'role'].map((k) => `${c}.visible_${k}(o, path)`).join(', ');
  const byOwner = byRelation.filter(([k]) => k === null).map(([, catalog, column]) => `(SELECT ${c}.visible_class(${column}, path) FROM ${catalog} WHERE oid = o)`);
  const object = test('visible_object', 'classid oid, o oid, path name[]', `
    BEGIN
      RETURN CASE
        WHEN o < ${FIRST_NORMAL_OID} THEN true
        WHEN classid IS NULL THEN coalesce(${anyObject}, ${byOwner.join(', ')})
        WHEN classid = 'pg_namespace'::regclass THEN ${c}.visible_namespace(o, path)
        WHEN classid = 'pg_authid'::regclass THEN ${c}.visible_role(o, path)
        ${byNamespace.map(([kind, catalog]) => `WHEN classid = '${catalog}'::regclass THEN ${c}.visible_${kind}(o, path)`).join('\n        ')}
        ${byRelation.map(([, catalog, column]) => `WHEN classid = '${catalog}'::regclass THEN (SELECT ${c}.visible_class(${column}, path) FROM ${catalog} WHERE oid = o)`).join('\n        ')}
        WHEN classid IN (${serverWide.map((t) => `'${t}'::regclass`).join(', ')}) THEN true
        ELSE false END;
    END`);
  const shared = test('visible_shared', 'o oid, catalog text, path name[]', `
    BEGIN
      RETURN CASE WHEN catalog = 'pg_authid' THEN ${c}.visible_role(o, path) ELSE true END;
    END`);
  const types = test('visible_types', 'v oidvector, path name[]', `
    BEGIN
      RETURN (SELECT bool_and(coalesce(${c}.visible_type(t, path), true)) FROM unnest(v::oid[]) AS t);
    END`);
  return [namespace, ...kinds, ...owned, role, object, shared, types].join('\n');
}

/** The test of one object argument in a stand-in: the system's objects pass without a lookup. */
const check = (kind: string, arg: string) => `(${arg}::oid < ${FIRST_NORMAL_OID} OR coalesce(${c}.visible_${kind}(${arg}::oid, current_schemas(true)), true))`;

/** `visible(v)` for every reg* type and its arrays: the value, or NULL for an object outside the caller's world. */
function castStandIns(): string {
  return [...regTypes].map(([type, kind]) => [
    fn('visible', `v ${type}`, type, `SELECT CASE WHEN ${check(kind, 'v')} THEN v END`),
    fn('visible', `v ${type}[]`, `${type}[]`, `SELECT CASE WHEN v IS NOT NULL THEN ARRAY(SELECT ${c}.visible(e) FROM unnest(v) WITH ORDINALITY AS u(e, n) ORDER BY n) END`),
  ].join('\n')).join('\n');
}

/**
 * `set_config` with a setting name computed at run time (pg_dump's
 * `set_config(name, …) FROM pg_settings WHERE name = …`): the stand-in refuses there what the
 * policy refuses of a constant name — roles, Citus settings — and the search_path, which the front
 * ends follow from the statements they see. Settings that change how text is read are caught
 * after the fact from the server's ParameterStatus, as for any function that sets them.
 *
 * `restrict_nonsystem_relation_kind` (pg_dump sets it to `view, foreign-table`, so that nobody's
 * view can stand in for a catalog while it runs) keeps its other kinds but not `view`: the
 * catalog views pg_dump reads here are the service's filtered ones, which the policy puts in
 * place of the catalogs it names.
 */
function setConfigStandIn(): string {
  const refusal = (r: Refusal) => `ARRAY[${literal(r.code)}, ${literal(r.message)}, ${literal(r.hint ?? '')}]`;
  return `
    CREATE FUNCTION ${c}.setting_refusal(setting_name text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT CASE
        WHEN lower(setting_name) IN ('role', 'session_authorization') THEN ${refusal(refusals.roleGames("set_config('role' or 'session_authorization', …)"))}
        WHEN lower(setting_name) LIKE 'citus.%' THEN ${refusal(refusals.citusSetting('citus.*'))}
        WHEN lower(setting_name) = 'search_path' THEN ${refusal(refusals.nonConstant('set_config', 'setting name for search_path'))}
      END;
    END;
    CREATE FUNCTION ${c}.setting_is(setting_name text, name text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT lower(setting_name) = name;
    END;
    CREATE FUNCTION ${c}.without_views(kinds text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT coalesce(string_agg(k, ', '), '') FROM unnest(string_to_array(kinds, ',')) AS u(e), LATERAL trim(e) AS k WHERE lower(k) <> 'view';
    END;
    CREATE FUNCTION ${c}.set_config(setting_name text, new_value text, is_local boolean) RETURNS text
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    AS $fn$
    DECLARE
      refusal text[] := ${c}.setting_refusal(setting_name);
    BEGIN
      IF refusal IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = refusal[1], MESSAGE = refusal[2], HINT = refusal[3];
      END IF;
      IF ${c}.setting_is(setting_name, 'restrict_nonsystem_relation_kind') THEN
        new_value := ${c}.without_views(new_value);
      END IF;
      RETURN pg_catalog.set_config(setting_name, new_value, is_local);
    END
    $fn$;`;
}

/** The checked functions' object arguments as rows: (function, argc, index, kind, by name, class at, catalog name at). */
function specRows(): string {
  const rows: string[] = [];
  const n = (v: number | undefined) => (v === undefined ? 'NULL' : String(v));
  for (const [name, spec] of checkedFunctions) {
    for (const [argc, args] of Object.entries(spec.args)) {
      for (const a of args) rows.push(`(${literal(name)}, ${argc}, ${a.at}, ${literal(a.kind)}, ${a.byName === true}, ${n(a.classAt)}, ${n(a.catalogNameAt)})`);
    }
  }
  return rows.join(',\n        ');
}

/** How each checked function answers for an object outside the caller's world: (function, answer SQL, raises, name answered NULL). */
function answerRows(): string {
  return [...checkedFunctions]
    .map(([name, s]) => `(${literal(name)}, ${s.missing === undefined ? 'NULL' : literal(s.missing)}, ${s.raises === true}, ${s.nameMissing === 'null'})`)
    .join(',\n        ');
}

/**
 * The SQL of migration 7: the visibility functions, the reg* cast stand-ins, and one stand-in per
 * overload of every checked function, generated from pg_proc of the server it runs on (so each
 * Postgres version gets exactly its own overloads).
 */
export function catalogWrappersSql(): string {
  return `
    ${visibilityFunctions()}
    ${castStandIns()}
    ${setConfigStandIn()}

    -- A name as text: whether its schema (if it names one) is of the caller's world.
    CREATE FUNCTION ${c}.visible_schema_of(name text) RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT ${c}.visible_namespace(s.oid, current_schemas(true)) FROM pg_namespace s
       WHERE s.nspname = (SELECT p[cardinality(p) - 1] FROM parse_ident(name, false) AS p WHERE cardinality(p) >= 2);
    END;
    CREATE FUNCTION ${c}.visible_role_named(name text) RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT ${c}.visible_role(oid, current_schemas(true)) FROM pg_roles WHERE rolname = name;
    END;

    -- What Postgres says of a missing object, for one the caller cannot see (true never returns).
    CREATE FUNCTION ${c}.no_schema(name text) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
      parts text[] := parse_ident(name, false);
    BEGIN
      RAISE EXCEPTION 'schema "%" does not exist', parts[cardinality(parts) - 1] USING ERRCODE = '3F000';
    END
    $fn$;
    CREATE FUNCTION ${c}.no_role(name text) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
      RAISE EXCEPTION 'role "%" does not exist', name USING ERRCODE = '42704';
    END
    $fn$;
    CREATE FUNCTION ${c}.no_relation(o oid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
      RAISE EXCEPTION 'could not open relation with OID %', o USING ERRCODE = 'XX000';
    END
    $fn$;

    DO $do$
    DECLARE
      p record;
      a record;
      r record;
      gates text[];
      tests text[];
      args text[];
      call text;
      body text;
      test text;
      regkinds constant jsonb := ${literal(JSON.stringify(Object.fromEntries(regTypes)))};
    BEGIN
      CREATE TEMP TABLE spec (fn text, argc int, at int, kind text, by_name boolean, class_at int, catalog_name_at int) ON COMMIT DROP;
      INSERT INTO spec VALUES
        ${specRows()};
      CREATE TEMP TABLE answers (fn text, missing text, raises boolean, name_null boolean) ON COMMIT DROP;
      INSERT INTO answers VALUES
        ${answerRows()};

      -- By name: a stand-in may use another one made before it (oidvectortypes uses format_type).
      FOR p IN
        SELECT f.oid, f.proname, f.pronargs, f.proargtypes::oid[] AS argtypes, f.proretset, f.prorettype, f.provolatile, f.proparallel,
               pg_get_function_arguments(f.oid) AS args, pg_get_function_result(f.oid) AS result,
               (SELECT string_agg('$' || i, ', ' ORDER BY i) FROM generate_series(1, f.pronargs) AS i) AS params
          FROM pg_proc f
         WHERE f.pronamespace = 'pg_catalog'::regnamespace
           AND f.proname IN (SELECT fn FROM answers)
           AND f.prokind = 'f'
           AND (f.proacl IS NULL OR aclcontains(f.proacl, makeaclitem(0, f.proowner, 'EXECUTE', false)))
         ORDER BY f.proname, f.oid
      LOOP
        SELECT * INTO r FROM answers WHERE fn = p.proname;
        -- Conditions that gate the call (names; relations that cannot be opened), and the
        -- arguments, each object outside the caller's world replaced by an oid naming nothing
        -- (0), so the original answers as for a missing object.
        gates := '{}';
        tests := '{}';
        args := ARRAY(SELECT '$' || i FROM generate_series(1, p.pronargs) AS i);
        FOR a IN
          SELECT u.ord - 1 AS i, u.t::regtype::text AS type, coalesce(s.kind, regkinds ->> u.t::regtype::text) AS kind,
                 coalesce(s.by_name, false) AS by_name, s.class_at, s.catalog_name_at
            FROM unnest(p.argtypes) WITH ORDINALITY AS u(t, ord)
            LEFT JOIN spec s ON s.fn = p.proname AND s.argc = p.pronargs AND s.at = u.ord - 1
        LOOP
          CONTINUE WHEN a.kind IS NULL OR a.kind = 'server';
          test := NULL;
          IF a.type IN ('text', 'name') THEN
            CONTINUE WHEN NOT a.by_name;
            -- A name: its schema must be of the caller's world; else what a missing schema gets.
            test := CASE WHEN a.kind = 'role' THEN format('${c}.visible_role_named($%s::text)', a.i + 1)
                         ELSE format('${c}.visible_schema_of($%s::text)', a.i + 1) END;
            IF NOT r.name_null THEN
              test := format('%s OR ${c}.%s($%s::text)', test, CASE WHEN a.kind = 'role' THEN 'no_role' ELSE 'no_schema' END, a.i + 1);
            END IF;
            gates := gates || format('coalesce(%s, true)', test);
            CONTINUE;
          ELSIF a.kind = 'object' THEN
            test := format('($%s < ${FIRST_NORMAL_OID} OR ${c}.visible_object(%s, $%s, current_schemas(true)))', a.i + 1,
              CASE WHEN a.class_at IS NOT NULL THEN format('$%s', a.class_at + 1)
                   WHEN a.catalog_name_at IS NOT NULL THEN format('to_regclass(%L || quote_ident($%s::text))::oid', 'pg_catalog.', a.catalog_name_at + 1)
                   ELSE 'NULL' END, a.i + 1);
          ELSIF a.kind = 'shared' THEN
            test := format('${c}.visible_shared($%s, $%s::text, current_schemas(true))', a.i + 1, a.catalog_name_at + 1);
          ELSIF a.type = 'oidvector' THEN
            test := format('${c}.visible_types($%s, current_schemas(true))', a.i + 1);
          ELSIF a.type = 'oid' OR regkinds ? a.type THEN
            test := format('($%s::oid < ${FIRST_NORMAL_OID} OR ${c}.visible_%s($%s::oid, current_schemas(true)))', a.i + 1, a.kind, a.i + 1);
          END IF;
          CONTINUE WHEN test IS NULL;
          IF r.raises AND a.kind = 'class' THEN
            gates := gates || format('coalesce(%s OR ${c}.no_relation($%s::oid), true)', test, a.i + 1);
          ELSIF r.missing IS NOT NULL THEN
            tests := tests || format('coalesce(%s, true)', test);
          ELSE
            args[a.i + 1] := format('CASE WHEN coalesce(%s, true) THEN $%s ELSE 0::oid::%s END', test, a.i + 1, a.type);
          END IF;
        END LOOP;
        call := format('pg_catalog.%I(%s)', p.proname, array_to_string(args, ', '));
        IF NOT p.proretset AND regkinds ? p.prorettype::regtype::text THEN
          call := format('${c}.visible(%s)', call);
        END IF;
        test := array_to_string(array_prepend('true', gates), ' AND ');
        IF p.proretset OR p.result = 'record' THEN
          body := format('SELECT * FROM %s WHERE %s', call, test);
        ELSIF r.missing IS NOT NULL THEN
          body := format('SELECT CASE WHEN %s THEN %s ELSE (%s)::%s END', array_to_string(test || tests, ' AND '), call, r.missing, format_type(p.prorettype, NULL));
        ELSE
          body := format('SELECT CASE WHEN %s THEN %s END', test, call);
        END IF;
        EXECUTE format('CREATE FUNCTION ${c}.%I(%s) RETURNS %s LANGUAGE sql %s PARALLEL %s BEGIN ATOMIC %s; END',
          p.proname, p.args, p.result,
          CASE p.provolatile WHEN 'v' THEN 'VOLATILE' ELSE 'STABLE' END,
          CASE p.proparallel WHEN 'u' THEN 'UNSAFE' WHEN 'r' THEN 'RESTRICTED' ELSE 'SAFE' END,
          body);
      END LOOP;
    END
    $do$;
  `;
}
