// Stand-ins that answer for a wire client's own session when pooling by transaction moves it
// between backends (src/wire/pooling.ts): what Postgres would show it on a backend of its own.
//
// Sequences. currval and lastval read what nextval last returned in the session, kept by the
// backend. A pooled client's values are captured from its backend after each transaction that may
// have made some (src/wire/sequences.ts: `capture_sequences` below) and carried like a setting,
// `repobase.sequences`; top-level calls are redirected to stand-ins that answer from the backend
// when it has the value (the client's own nextval since it came to this backend: the front end
// clears a backend's sequence state before another client's first use of it), else from the
// setting. Outside pooling the setting is absent and the stand-ins answer as the originals.
//
// Control-plane migration 14 creates them: a change here needs a new migration.
import { CATALOG_SCHEMA } from './catalog-views.js';
import { SENDERS_PREFIX } from './channels.js';

/** The custom setting holding a pooled client's captured sequence state: `{"<oid>": "<value>", "last": "<value>"}`. */
export const SEQUENCES_SETTING = 'repobase.sequences';

/**
 * The custom setting listing (`a.b,c.d`) the custom settings other clients left defined on the
 * backend (they exist there, empty, once set: Postgres keeps a setting's name for the session)
 * that the client itself never set: the stand-in of current_setting answers for them as for a
 * setting that does not exist. The service's own (`repobase.…`) are never the client's.
 */
export const HIDDEN_SETTING = 'repobase.hidden';

/**
 * The user's wire clients, as the front end knows them (one JSON object each: its process id,
 * the backend serving it if any, its application_name, address, port, times, state and the text
 * of its last query), which the stand-in of pg_stat_activity lists one row each: pooling, a
 * session is a client, not a backend.
 */
export const ACTIVITY_SETTING = 'repobase.activity';

/**
 * The client's prepared statements (its name for each, the backend's, its own text, whether SQL
 * made it, when): the stand-in of pg_prepared_statements lists those, not the backend's.
 */
export const STATEMENTS_SETTING = 'repobase.statements';

/** pg_catalog relations redirected to stand-ins of the session (besides the filtered catalog's). */
export const sessionViews: ReadonlySet<string> = new Set(['pg_prepared_statements']);

/** The user a session's role acts for: the role itself, or the user of a scoped key's role (`alice#<key id>`). */
const TENANT = "pg_catalog.split_part(CURRENT_USER, '#', 1)";

/** The SQL of migration 14. */
export function sessionStandInsSql(): string {
  const c = CATALOG_SCHEMA;
  const captured = `coalesce(nullif(pg_catalog.current_setting('${SEQUENCES_SETTING}', true), ''), '{}')::jsonb`;
  return `
    -- pg_notify answers the void value, as Postgres' own does (with a SET clause the function
    -- answered NULL): every name is qualified instead.
    CREATE OR REPLACE FUNCTION ${c}.pg_notify(channel text, payload text) RETURNS void
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    AS $fn$
      SELECT pg_catalog.pg_notify(CASE WHEN pg_catalog.starts_with(channel, pg_catalog.concat(${TENANT}, '/')) THEN channel ELSE pg_catalog.concat(${TENANT}, '/', channel) END, payload)
    $fn$;
    ALTER FUNCTION ${c}.pg_notify(text, text) RESET ALL;

    -- pg_listening_channels: each channel by the name the client listened to, not its name upstream
    -- (src/policy/channels.ts), and not the channel of sender announcements.
    CREATE OR REPLACE FUNCTION ${c}.pg_listening_channels() RETURNS SETOF text LANGUAGE sql STABLE PARALLEL RESTRICTED ROWS 10
    BEGIN ATOMIC
      SELECT CASE WHEN pg_catalog.starts_with(c, pg_catalog.concat(${TENANT}, '/')) THEN pg_catalog.substr(c, pg_catalog.length(${TENANT}) + 2) ELSE c END
        FROM pg_catalog.pg_listening_channels() AS c
       WHERE NOT pg_catalog.starts_with(c, '${SENDERS_PREFIX}');
    END;

    -- currval: the backend's value, else the one the client carries; a sequence outside the
    -- caller's world is a relation that cannot be opened (as the checked stand-in of migration 7).
    CREATE OR REPLACE FUNCTION ${c}.currval(regclass) RETURNS bigint
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
      v text;
    BEGIN
      IF NOT coalesce(${c}.visible_class($1::oid, current_schemas(true)) OR ${c}.no_relation($1::oid), true) THEN RETURN NULL; END IF;
      RETURN pg_catalog.currval($1);
    EXCEPTION WHEN object_not_in_prerequisite_state THEN
      v := ${captured} ->> ($1::oid)::text;
      IF v IS NULL THEN RAISE; END IF;
      RETURN v::bigint;
    END
    $fn$;

    -- current_setting of a custom setting: as for one that does not exist when the client never set it.
    CREATE FUNCTION ${c}.hidden_setting(name text) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT pg_catalog.starts_with(pg_catalog.lower(name), 'repobase.')
          OR pg_catalog.strpos(pg_catalog.concat(',', pg_catalog.current_setting('${HIDDEN_SETTING}', true), ','), pg_catalog.concat(',', pg_catalog.lower(name), ',')) > 0;
    END;
    CREATE FUNCTION ${c}.unrecognized_setting(name text) RETURNS text
    LANGUAGE plpgsql VOLATILE PARALLEL SAFE
    AS $fn$
    BEGIN
      RAISE EXCEPTION 'unrecognized configuration parameter "%"', name USING ERRCODE = '42704';
    END
    $fn$;
    CREATE FUNCTION ${c}.current_setting(text) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT CASE WHEN ${c}.hidden_setting($1) THEN ${c}.unrecognized_setting($1) ELSE pg_catalog.current_setting($1) END;
    END;
    CREATE FUNCTION ${c}.current_setting(text, boolean) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT CASE WHEN NOT ${c}.hidden_setting($1) THEN pg_catalog.current_setting($1, $2) WHEN $2 THEN NULL ELSE ${c}.unrecognized_setting($1) END;
    END;

    CREATE OR REPLACE FUNCTION ${c}.lastval() RETURNS bigint
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
      v text;
    BEGIN
      RETURN pg_catalog.lastval();
    EXCEPTION WHEN object_not_in_prerequisite_state THEN
      -- The sequence nextval last used, as its value is now (a setval since changes it too).
      v := coalesce(${captured} ->> (${captured} ->> 'last_seq'), ${captured} ->> 'last');
      IF v IS NULL THEN RAISE; END IF;
      RETURN v::bigint;
    END
    $fn$;

    -- The session's sequence state after a transaction of a pooled client, merged into what it
    -- carries: the sequences it named (nextval, setval), those the tables it wrote to take defaults
    -- from (serial and identity columns, any default naming a sequence), and with \`every\` (code
    -- the front end could not see into ran) every sequence it may use. Also says which of
    -- \`tables\` take no default from a sequence (the front end stops asking for them).
    CREATE FUNCTION ${c}.capture_sequences(seqs text[], tables text[], every boolean, OUT state text, OUT sequence_free text)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    -- No SET clause: the names are the client's, read with its search_path; every name here is qualified.
    AS $fn$
    DECLARE
      merged jsonb := ${captured};
      s oid;
    BEGIN
      sequence_free := pg_catalog.to_json(ARRAY(
        SELECT t FROM pg_catalog.unnest(tables) AS t
         WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class q ON q.oid = d.objid AND q.relkind = 'S'
                            WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                              AND d.refobjid = pg_catalog.to_regclass(t))
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_attrdef a
                             JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid = a.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
                             JOIN pg_catalog.pg_class q ON q.oid = d.refobjid AND q.relkind = 'S'
                            WHERE a.adrelid = pg_catalog.to_regclass(t))))::text;
      FOR s IN
        SELECT pg_catalog.to_regclass(n)::oid FROM pg_catalog.unnest(seqs) AS n
        UNION
        SELECT d.objid FROM pg_catalog.unnest(tables) AS t
          JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid = pg_catalog.to_regclass(t)
          JOIN pg_catalog.pg_class q ON q.oid = d.objid AND q.relkind = 'S'
        UNION
        SELECT d.refobjid FROM pg_catalog.unnest(tables) AS t
          JOIN pg_catalog.pg_attrdef a ON a.adrelid = pg_catalog.to_regclass(t)
          JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid = a.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
          JOIN pg_catalog.pg_class q ON q.oid = d.refobjid AND q.relkind = 'S'
        UNION
        SELECT q.oid FROM pg_catalog.pg_class q
         WHERE every AND q.relkind = 'S' AND q.relnamespace IN (SELECT ${c}.visible_namespaces(pg_catalog.current_schemas(true)))
           AND CASE WHEN q.relkind = 'S' THEN pg_catalog.has_sequence_privilege(q.oid, 'USAGE') END
      LOOP
        CONTINUE WHEN s IS NULL;
        BEGIN
          merged := merged OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(s::text, pg_catalog.currval(s)::text);
        EXCEPTION WHEN object_not_in_prerequisite_state OR insufficient_privilege OR undefined_table THEN
          NULL;
        END;
      END LOOP;
      BEGIN
        merged := merged OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('last', pg_catalog.lastval()::text);
        -- Which sequence that is: the one whose value it is, when only one is.
        merged := merged OPERATOR(pg_catalog.-) 'last_seq';
        FOR s IN SELECT k::oid FROM pg_catalog.jsonb_each_text(merged) AS e(k, v) WHERE k ~ '^[0-9]+$' AND v = merged ->> 'last' LOOP
          IF merged OPERATOR(pg_catalog.?) 'last_seq' THEN
            merged := merged OPERATOR(pg_catalog.-) 'last_seq';
            EXIT;
          END IF;
          merged := merged OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('last_seq', s::text);
        END LOOP;
      EXCEPTION WHEN object_not_in_prerequisite_state OR insufficient_privilege OR undefined_table THEN
        NULL;
      END;
      state := merged::text;
      PERFORM pg_catalog.set_config('${SEQUENCES_SETTING}', state, false);
    END
    $fn$;
    ${activityViewSql()}
    ${statementsViewSql()}
    GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${c} TO PUBLIC;
    GRANT SELECT ON ALL TABLES IN SCHEMA ${c} TO PUBLIC;`;
}

/** The JSON list a setting holds, or none when it is not set (the stand-ins then show the backend's own). */
const listOf = (setting: string) => `pg_catalog.jsonb_array_elements(nullif(pg_catalog.current_setting('${setting}', true), '')::jsonb)`;
const isSet = (setting: string) => `coalesce(pg_catalog.current_setting('${setting}', true), '') <> ''`;
/** SQL inside a string literal (the format() of a DO block). */
const quoted = (sql: string) => sql.replaceAll("'", "''");

/**
 * pg_stat_activity: with the clients the front end listed, one row each (the columns it knows from
 * the client, the rest from the backend serving it, if any); without, the user's backends as
 * migration 9 shows them. Built from the server's own columns, with their types.
 */
function activityViewSql(): string {
  const c = CATALOG_SCHEMA;
  const fromClient = ['pid', 'application_name', 'client_addr', 'client_port', 'backend_start', 'xact_start', 'query_start', 'state_change', 'state', 'query'];
  const list = (names: string[]) => `ARRAY[${names.map((n) => `'${n}'`).join(', ')}]`;
  return `
    DO $do$
    DECLARE
      clients text;
      backends text;
    BEGIN
      SELECT string_agg(CASE
               WHEN a.attname = ANY (${list(fromClient)}) THEN format('(e ->> %L)::%s AS %I', a.attname, format_type(a.atttypid, a.atttypmod), a.attname)
               WHEN a.attname = 'leader_pid' THEN 'NULL::integer AS leader_pid'
               WHEN a.attname = 'datid' THEN '(SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()) AS datid'
               WHEN a.attname = 'datname' THEN 'pg_catalog.current_database()::name AS datname'
               WHEN a.attname = 'usesysid' THEN '(SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER) AS usesysid'
               WHEN a.attname = 'usename' THEN 'CURRENT_USER::name AS usename'
               WHEN a.attname = 'backend_type' THEN '''client backend''::text AS backend_type'
               ELSE format('b.%I', a.attname) END, ', ' ORDER BY a.attnum),
             string_agg(CASE
               WHEN a.attname IN ('pid', 'leader_pid') THEN format('CASE WHEN %1$I = pg_catalog.pg_backend_pid() THEN ${c}.pg_backend_pid() ELSE %1$I END AS %1$I', a.attname)
               ELSE format('%I', a.attname) END, ', ' ORDER BY a.attnum)
        INTO clients, backends
        FROM pg_catalog.pg_attribute a
       WHERE a.attrelid = 'pg_catalog.pg_stat_activity'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
      EXECUTE format('CREATE OR REPLACE VIEW ${c}.pg_stat_activity WITH (security_barrier) AS
        SELECT %s FROM ${quoted(listOf(ACTIVITY_SETTING))} AS e
          LEFT JOIN pg_catalog.pg_stat_activity b ON b.pid = (e ->> %L)::integer
        UNION ALL
        SELECT %s FROM pg_catalog.pg_stat_activity
         WHERE usesysid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = CURRENT_USER) AND NOT ${quoted(isSet(ACTIVITY_SETTING))}',
        clients, 'backend', backends);
    END
    $do$;`;
}

/** pg_prepared_statements: with the client's statements listed, those, as the backend holds them; without, the backend's. */
function statementsViewSql(): string {
  const c = CATALOG_SCHEMA;
  const mine = ['name', 'statement', 'prepare_time', 'from_sql'];
  const list = (names: string[]) => `ARRAY[${names.map((n) => `'${n}'`).join(', ')}]`;
  return `
    DO $do$
    DECLARE
      columns text;
    BEGIN
      SELECT string_agg(CASE
               WHEN a.attname = ANY (${list(mine)}) THEN format('(e ->> %L)::%s AS %I', a.attname, format_type(a.atttypid, a.atttypmod), a.attname)
               ELSE format('s.%I', a.attname) END, ', ' ORDER BY a.attnum)
        INTO columns
        FROM pg_catalog.pg_attribute a
       WHERE a.attrelid = 'pg_catalog.pg_prepared_statements'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
      EXECUTE format('CREATE VIEW ${c}.pg_prepared_statements WITH (security_barrier) AS
        SELECT %s FROM ${quoted(listOf(STATEMENTS_SETTING))} AS e
          JOIN pg_catalog.pg_prepared_statements s ON s.name = (e ->> %L)
        UNION ALL
        SELECT * FROM pg_catalog.pg_prepared_statements WHERE NOT ${quoted(isSet(STATEMENTS_SETTING))}',
        columns, 'server');
    END
    $do$;`;
}
