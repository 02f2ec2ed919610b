// What Postgres itself does about the DDL of scoped keys (control-plane migration 12).
//
// The session of a scoped key runs as a role of its own, `<user>#<key id>` (key-roles.ts), that
// holds only the privileges of the key's scope and is never a member of the user's role. A
// `write` key may change the structure of its user's repos in its scope; Postgres lets only an
// object's owner (or a member of the owner's role) alter or drop it, and makes whoever creates an
// object its owner. Two event triggers bridge that, for key roles only (`session_user` names one):
//
// - at `ddl_command_start` a command outside the allowed list (tables, views, materialized views,
//   indexes, sequences, types, domains, triggers, rules, policies, statistics, comments, and drops
//   of functions) is refused: no GRANT, no function or procedure, no schema, no operator or cast.
//   Then the objects the statement names — listed by the policy in a comment of the statement,
//   `/*repobase:own <base64 JSON [[kind, schema, name], …]>*/` — are *lent* to the key role for the
//   command: each that its user owns, in a schema where the key role holds CREATE (granted only for
//   a write key's own repos), gets the key role as owner. What the comment names is a request,
//   checked here against Postgres' own grants: a forged one can lend nothing outside the scope.
// - at `ddl_command_end` whatever the key role owns is given back to its user, objects it created
//   included, which then get the user's default privileges of their schema (collaborators, public
//   repos, keys), as if the user had made them; and the command is refused (rolled back) if what it
//   made or changed uses a function, type or operator outside the system and the key's own repos:
//   code put there would later run with the rights of whoever uses the object, the user included.
//
// So between statements a key role owns nothing, DDL leaves objects owned by the user's role as DDL
// by a full key does, and the statement itself runs with the key's privileges only: expressions it
// evaluates (defaults, index expressions, a materialized view's query) see no more than the key.
//
// The functions run as the admin role (SECURITY DEFINER, search_path pinned); their own ALTER …
// OWNER and GRANT statements fire the triggers again, which then see their caller in PG_CONTEXT
// (the real call stack, which a user cannot write) and do nothing. Event triggers need a
// superuser: without one the migration installs nothing and write keys get no DDL (the policy
// refuses it, and their roles hold no CREATE).

/** The comment the policy puts in a write key's DDL: objects to lend for the command. */
export { LEND_COMMENT_PREFIX } from '../policy/key-scope.js';

/** The event triggers of migration 12 (database-wide names, prefixed with the service's). */
export const KEY_EVENT_TRIGGERS = ['repobase_key_ddl_start', 'repobase_key_ddl_end'] as const;

/** Command tags a key role may run (at ddl_command_start); every other DDL is refused. */
export const KEY_DDL_TAGS = [
  'CREATE TABLE', 'ALTER TABLE', 'DROP TABLE', 'CREATE TABLE AS', 'SELECT INTO',
  'CREATE VIEW', 'ALTER VIEW', 'DROP VIEW',
  'CREATE MATERIALIZED VIEW', 'ALTER MATERIALIZED VIEW', 'DROP MATERIALIZED VIEW', 'REFRESH MATERIALIZED VIEW',
  'CREATE INDEX', 'ALTER INDEX', 'DROP INDEX', 'REINDEX',
  'CREATE SEQUENCE', 'ALTER SEQUENCE', 'DROP SEQUENCE',
  'CREATE TYPE', 'ALTER TYPE', 'DROP TYPE', 'CREATE DOMAIN', 'ALTER DOMAIN', 'DROP DOMAIN',
  'CREATE TRIGGER', 'ALTER TRIGGER', 'DROP TRIGGER', 'CREATE RULE', 'ALTER RULE', 'DROP RULE',
  'CREATE POLICY', 'ALTER POLICY', 'DROP POLICY',
  'CREATE STATISTICS', 'ALTER STATISTICS', 'DROP STATISTICS',
  'COMMENT', 'DROP FUNCTION', 'DROP PROCEDURE', 'DROP ROUTINE',
] as const;

/** The SQL of migration 12's functions and triggers, in schema `control`. */
export function keyTriggersSql(control: string): string {
  const c = control;
  const tags = KEY_DDL_TAGS.map((t) => `'${t}'`).join(', ');
  // Our own statements fire the triggers again: these callers mark them (see the module comment).
  const nested = `position('function ${c}.key_set_owner(' in ctx) > 0 OR position('function ${c}.key_apply_defaults(' in ctx) > 0`;
  return `
    -- The user a key role acts for ("alice" for "alice#0123456789ab"); null for any other role.
    CREATE FUNCTION ${c}.key_user(role text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$ SELECT CASE WHEN role ~ '^[a-z][a-z0-9_]{1,38}#[0-9a-f]{12}$' THEN split_part(role, '#', 1) END $fn$;

    -- ALTER … OWNER TO new_owner of one object, if old_owner owns it now (what goes with a table —
    -- its indexes, row type, column sequences — is left to the table's own ALTER).
    CREATE FUNCTION ${c}.key_set_owner(classid oid, objid oid, old_owner oid, new_owner text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
      stmt text;
    BEGIN
      IF classid = 'pg_class'::regclass THEN
        SELECT CASE
                 WHEN c.relkind = 'c' THEN format('ALTER TYPE %s OWNER TO %I', c.reltype::regtype, new_owner)
                 WHEN c.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')) THEN NULL
                 ELSE format('ALTER %s %s OWNER TO %I',
                             CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
                             c.oid::regclass, new_owner)
               END
          INTO stmt FROM pg_class c
         WHERE c.oid = objid AND c.relowner = old_owner AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c') AND c.relpersistence <> 't';
      ELSIF classid = 'pg_proc'::regclass THEN
        SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, new_owner) INTO stmt
          FROM pg_proc p WHERE p.oid = objid AND p.proowner = old_owner AND p.pronamespace <> pg_my_temp_schema();
      ELSIF classid = 'pg_type'::regclass THEN
        SELECT format('ALTER %s %s OWNER TO %I', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype, new_owner) INTO stmt
          FROM pg_type t
         WHERE t.oid = objid AND t.typowner = old_owner AND t.typnamespace <> pg_my_temp_schema()
           AND (t.typtype IN ('d', 'e', 'r') OR (t.typtype = 'c' AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c'));
      ELSIF classid = 'pg_statistic_ext'::regclass THEN
        SELECT format('ALTER STATISTICS %I.%I OWNER TO %I', n.nspname, s.stxname, new_owner) INTO stmt
          FROM pg_statistic_ext s JOIN pg_namespace n ON n.oid = s.stxnamespace WHERE s.oid = objid AND s.stxowner = old_owner;
      END IF;
      IF stmt IS NULL THEN RETURN false; END IF;
      EXECUTE stmt;
      RETURN true;
    END $fn$;

    -- The schema's default privileges of the user, granted on an object the key role created (the
    -- user's GRANT as if the user had made it: a superuser's GRANT is recorded as the owner's);
    -- with only_to, those of that grantee alone (a lent object: its ACL entry for the key role
    -- merged into the owner's while the key role owned it, and is given again).
    CREATE FUNCTION ${c}.key_apply_defaults(classid oid, objid oid, owner_oid oid, only_to oid DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
      nsp oid;
      objtype "char";
      what text;
      target text;
      g record;
    BEGIN
      IF classid = 'pg_class'::regclass THEN
        SELECT c.relnamespace, CASE WHEN c.relkind = 'S' THEN 'S' ELSE 'r' END, CASE WHEN c.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.oid::regclass::text
          INTO nsp, objtype, what, target FROM pg_class c WHERE c.oid = objid AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f');
      ELSIF classid = 'pg_type'::regclass THEN
        SELECT t.typnamespace, 'T', 'TYPE', t.oid::regtype::text INTO nsp, objtype, what, target FROM pg_type t WHERE t.oid = objid;
      END IF;
      IF target IS NULL THEN RETURN; END IF;
      FOR g IN
        SELECT a.privilege_type, a.is_grantable, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END AS grantee
          FROM pg_default_acl d CROSS JOIN LATERAL aclexplode(d.defaclacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
         WHERE d.defaclrole = owner_oid AND d.defaclnamespace IN (nsp, 0) AND d.defaclobjtype = objtype AND (a.grantee = 0 OR r.oid IS NOT NULL)
           AND (only_to IS NULL OR a.grantee = only_to)
      LOOP
        EXECUTE format('GRANT %s ON %s %s TO %s%s', g.privilege_type, what, target, g.grantee, CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
      END LOOP;
    END $fn$;

    CREATE FUNCTION ${c}.key_ddl_start() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
      owner text := ${c}.key_user(session_user);
      owner_oid oid;
      ctx text;
      spec text;
      item json;
      nsp oid;
      found_rel record;
      rel oid;
      obj record;
    BEGIN
      IF owner IS NULL THEN RETURN; END IF;
      GET DIAGNOSTICS ctx = PG_CONTEXT;
      IF ${nested} THEN RETURN; END IF;
      IF TG_TAG NOT IN (${tags}) THEN
        RAISE EXCEPTION '% is not allowed with a scoped API key', TG_TAG USING ERRCODE = '42501',
          HINT = 'a write key changes tables, views, indexes, sequences, types, triggers, rules and policies of its repos; use a full key for the rest';
      END IF;
      spec := substring(current_query() from '/\\*repobase:own ([A-Za-z0-9+/=]*)\\*/');
      IF spec IS NULL THEN RETURN; END IF;
      owner_oid := (SELECT oid FROM pg_roles WHERE rolname = owner);
      FOR item IN SELECT value FROM json_array_elements(convert_from(decode(spec, 'base64'), 'UTF8')::json) LOOP
        nsp := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = item->>1 AND n.nspowner = owner_oid);
        -- Only what the user owns in a repo where the key may change the structure.
        CONTINUE WHEN nsp IS NULL OR NOT has_schema_privilege(session_user, nsp, 'CREATE');
        IF item->>0 = 'r' THEN
          SELECT c.oid, c.relkind INTO found_rel FROM pg_class c WHERE c.relnamespace = nsp AND c.relname = item->>2;
          CONTINUE WHEN NOT FOUND;
          rel := found_rel.oid;
          -- An index, or the sequence of a column, goes with its table.
          IF found_rel.relkind IN ('i', 'I') THEN
            rel := (SELECT i.indrelid FROM pg_index i WHERE i.indexrelid = found_rel.oid);
          ELSIF found_rel.relkind = 'S' THEN
            rel := coalesce((SELECT d.refobjid FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = found_rel.oid AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') LIMIT 1), found_rel.oid);
          END IF;
          PERFORM ${c}.key_set_owner('pg_class'::regclass, rel, owner_oid, session_user);
        ELSE
          -- A SECURITY DEFINER function is never lent: it would run as the key after the change.
          FOR obj IN
            SELECT 'pg_proc'::regclass::oid AS classid, p.oid FROM pg_proc p WHERE p.pronamespace = nsp AND p.proname = item->>2 AND NOT p.prosecdef
            UNION ALL SELECT 'pg_type'::regclass::oid, t.oid FROM pg_type t WHERE t.typnamespace = nsp AND t.typname = item->>2 AND t.typtype IN ('d', 'e', 'r')
            UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, s.oid FROM pg_statistic_ext s WHERE s.stxnamespace = nsp AND s.stxname = item->>2
          LOOP
            PERFORM ${c}.key_set_owner(obj.classid, obj.oid, owner_oid, session_user);
          END LOOP;
        END IF;
      END LOOP;
    END $fn$;

    CREATE FUNCTION ${c}.key_ddl_end() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
      owner text := ${c}.key_user(session_user);
      owner_oid oid;
      me oid;
      ctx text;
      bad record;
      obj record;
      seq record;
      fresh boolean;
    BEGIN
      IF owner IS NULL THEN RETURN; END IF;
      GET DIAGNOSTICS ctx = PG_CONTEXT;
      IF ${nested} THEN RETURN; END IF;
      owner_oid := (SELECT oid FROM pg_roles WHERE rolname = owner);
      me := (SELECT oid FROM pg_roles WHERE rolname = session_user);
      -- What the command made or changed, with its parts (defaults, constraints, triggers, rules,
      -- policies, indexes), may use functions, types and operators of the system and of the key's
      -- own repos only.
      WITH changed AS (
        SELECT d.classid, d.objid FROM pg_event_trigger_ddl_commands() d
      ), parts AS (
        SELECT classid, objid FROM changed
        UNION SELECT p.classid, p.objid FROM pg_depend p JOIN changed ch ON p.refclassid = ch.classid AND p.refobjid = ch.objid AND p.deptype IN ('a', 'i')
      ), used AS (
        SELECT DISTINCT d.refclassid, d.refobjid FROM pg_depend d JOIN parts x ON d.classid = x.classid AND d.objid = x.objid
         WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_type'::regclass, 'pg_operator'::regclass) AND d.refobjid >= 16384
      ), placed AS (
        SELECT u.refclassid, u.refobjid, coalesce(p.pronamespace, t.typnamespace, o.oprnamespace) AS nsp
          FROM used u
          LEFT JOIN pg_proc p ON u.refclassid = 'pg_proc'::regclass AND p.oid = u.refobjid
          LEFT JOIN pg_type t ON u.refclassid = 'pg_type'::regclass AND t.oid = u.refobjid
          LEFT JOIN pg_operator o ON u.refclassid = 'pg_operator'::regclass AND o.oid = u.refobjid
      )
      SELECT pg_describe_object(x.refclassid, x.refobjid, 0) AS what INTO bad
        FROM placed x LEFT JOIN pg_namespace n ON n.oid = x.nsp
       WHERE x.nsp IS NULL OR NOT (x.nsp < 16384 OR (n.nspowner = owner_oid AND has_schema_privilege(session_user, x.nsp, 'CREATE')))
       LIMIT 1;
      IF FOUND THEN
        RAISE EXCEPTION 'a scoped API key cannot make objects that use % from outside its own repos', bad.what USING ERRCODE = '42501',
          HINT = 'use the functions, types and operators of the key''s repos and of the system, or a full key';
      END IF;
      -- Everything the key role owns goes to its user: tables first (their indexes, row types and
      -- column sequences go with them), then what is left. A fresh object (no ACL yet) gets the
      -- user's default privileges of its schema; a lent one the key role's own grant again.
      FOR obj IN
        SELECT d.classid, d.objid FROM pg_shdepend d
         WHERE d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND d.refclassid = 'pg_authid'::regclass AND d.refobjid = me AND d.deptype = 'o'
         ORDER BY d.classid <> 'pg_class'::regclass,
                  (SELECT c.relkind NOT IN ('r', 'p') FROM pg_class c WHERE d.classid = 'pg_class'::regclass AND c.oid = d.objid) NULLS LAST,
                  d.objid
      LOOP
        fresh := CASE obj.classid
                   WHEN 'pg_class'::regclass THEN (SELECT c.relacl IS NULL FROM pg_class c WHERE c.oid = obj.objid)
                   WHEN 'pg_type'::regclass THEN (SELECT t.typacl IS NULL FROM pg_type t WHERE t.oid = obj.objid)
                   ELSE false END;
        IF ${c}.key_set_owner(obj.classid, obj.objid, me, owner) THEN
          PERFORM ${c}.key_apply_defaults(obj.classid, obj.objid, owner_oid, CASE WHEN fresh THEN NULL ELSE me END);
          -- The sequences of a table's columns went with it: fresh ones get the defaults, lent ones the key's grant back.
          IF obj.classid = 'pg_class'::regclass THEN
            FOR seq IN
              SELECT s.oid, s.relacl IS NULL AS fresh FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
               WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.refobjid = obj.objid AND d.deptype IN ('a', 'i')
            LOOP
              PERFORM ${c}.key_apply_defaults('pg_class'::regclass, seq.oid, owner_oid, CASE WHEN seq.fresh THEN NULL ELSE me END);
            END LOOP;
          END IF;
        END IF;
      END LOOP;
      -- Whatever it still owns (a kind no ALTER … OWNER above covers) fails the command.
      SELECT pg_describe_object(d.classid, d.objid, 0) AS what INTO bad FROM pg_shdepend d
       WHERE d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND d.refclassid = 'pg_authid'::regclass AND d.refobjid = me AND d.deptype = 'o'
         AND NOT EXISTS (SELECT FROM pg_class c WHERE d.classid = 'pg_class'::regclass AND c.oid = d.objid AND (c.relpersistence = 't' OR c.relkind IN ('i', 'I', 't')))
         AND NOT EXISTS (SELECT FROM pg_type t WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                          AND (t.typnamespace = pg_my_temp_schema() OR t.typelem <> 0 OR t.typtype = 'm'
                               OR (t.typrelid <> 0 AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) <> 'c')))
       LIMIT 1;
      IF FOUND THEN
        RAISE EXCEPTION 'a scoped API key cannot own %', bad.what USING ERRCODE = '42501', HINT = 'use a full key';
      END IF;
    END $fn$;

    -- Event triggers need a superuser; without one nothing is installed (write keys then get no DDL).
    DO $do$
    BEGIN
      IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        CREATE EVENT TRIGGER ${KEY_EVENT_TRIGGERS[0]} ON ddl_command_start EXECUTE FUNCTION ${c}.key_ddl_start();
        CREATE EVENT TRIGGER ${KEY_EVENT_TRIGGERS[1]} ON ddl_command_end EXECUTE FUNCTION ${c}.key_ddl_end();
      END IF;
    END
    $do$;
  `;
}
