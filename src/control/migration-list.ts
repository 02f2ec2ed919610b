/**
 * The control plane's migrations, in order: each a version, a name and its SQL (migrations.ts
 * applies them). A migration, once released, never changes: a change is a new one.
 */
import { escapeIdentifier } from 'pg';
import { catalogStatsSql, catalogTableoidSql, catalogViewsSql } from '../policy/catalog-views.js';
import { catalogWrappersSql } from '../policy/catalog-wrappers.js';
import { backendPidSql, clientSignalSql } from '../policy/backend-pid.js';
import { sessionStandInsSql } from '../policy/session-stand-ins.js';
import { tenantNotifySql } from '../policy/channels.js';
import { keyTriggersSql } from './key-triggers.js';

/** The private schema of the control plane; user roles have no privilege on it. */
export const CONTROL_SCHEMA = '_repobase';

/** The NOTIFY channel of repo schema changes (see migration 4). */
export const SCHEMA_EVENT_CHANNEL = 'repobase_schema';

/** The event triggers of migration 4: database-wide names, so prefixed with the service's. */
export const SCHEMA_EVENT_TRIGGERS = ['repobase_schema_ddl', 'repobase_schema_drop'] as const;

export interface Migration {
  version: number;
  name: string;
  sql: (database: string) => string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, api keys, repos, collaborators',
    sql: (database) => `
      -- Users may create nothing outside the repos the control plane gives them.
      REVOKE CREATE ON DATABASE ${escapeIdentifier(database)} FROM PUBLIC;
      REVOKE CREATE ON SCHEMA public FROM PUBLIC;
      REVOKE ALL ON SCHEMA ${CONTROL_SCHEMA} FROM PUBLIC;

      CREATE TABLE ${CONTROL_SCHEMA}.users (
        name text PRIMARY KEY,
        -- SCRAM salt and iterations shared by all keys of the user (the wire front end's
        -- SCRAM exchange sends one salt before it knows which key the client holds).
        scram_salt bytea NOT NULL,
        scram_iterations integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE ${CONTROL_SCHEMA}.api_keys (
        id text PRIMARY KEY,
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        secret_hash bytea NOT NULL,
        scram_stored_key bytea NOT NULL,
        scram_server_key bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.api_keys (user_name);
      CREATE TABLE ${CONTROL_SCHEMA}.repos (
        owner text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        name text NOT NULL,
        is_private boolean NOT NULL DEFAULT true,
        description text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, name)
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.repos (is_private) WHERE NOT is_private;
      CREATE TABLE ${CONTROL_SCHEMA}.collaborators (
        owner text NOT NULL,
        repo text NOT NULL,
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        permission text NOT NULL CHECK (permission IN ('read', 'write')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, repo, user_name),
        FOREIGN KEY (owner, repo) REFERENCES ${CONTROL_SCHEMA}.repos(owner, name) ON DELETE CASCADE ON UPDATE CASCADE
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.collaborators (user_name);
      CREATE TABLE ${CONTROL_SCHEMA}.settings (
        key text PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'import jobs',
    sql: () => `
      CREATE TABLE ${CONTROL_SCHEMA}.imports (
        id uuid PRIMARY KEY,
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        repo text NOT NULL,
        table_name text NOT NULL,
        mode text NOT NULL,
        status text NOT NULL CHECK (status IN ('RECEIVED', 'PROCESSING', 'DONE', 'FAILED')),
        bytes bigint NOT NULL DEFAULT 0,
        rows bigint NOT NULL DEFAULT 0,
        -- format, header, delimiter and inferred columns, once known
        result jsonb,
        error jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- heartbeat of the instance running it: a stale running job was interrupted
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.imports (user_name, created_at);
    `,
  },
  {
    version: 3,
    name: 'passwords and web console sessions',
    sql: () => `
      -- scrypt$<N>$<r>$<p>$<salt>$<hash>; null: the user has only API keys (no console log-in).
      ALTER TABLE ${CONTROL_SCHEMA}.users ADD COLUMN password_hash text;

      CREATE TABLE ${CONTROL_SCHEMA}.web_sessions (
        -- SHA-256 of the cookie's random id: a leaked table cannot be replayed as cookies.
        id_hash bytea PRIMARY KEY,
        -- Deleting a user ends their sessions with it.
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        csrf_token text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.web_sessions (user_name);
      CREATE INDEX ON ${CONTROL_SCHEMA}.web_sessions (expires_at);
    `,
  },
  {
    version: 4,
    name: 'live schema events',
    sql: () => `
      -- Every schema change of a repo, whatever path made it (wire, REST, an upload, a function,
      -- a DO block), is told to the serving instances: NOTIFY ${SCHEMA_EVENT_CHANNEL}, once per
      -- repo and table, sent when the change commits (never for one rolled back). The function runs
      -- as the role that ran the DDL (a trigger function needs no EXECUTE grant, and users have no
      -- privilege on this schema, so they cannot change it); its search_path is pinned so that
      -- nothing a user creates can stand in for the catalogs or pg_notify.
      CREATE FUNCTION ${CONTROL_SCHEMA}.notify_schema_change() RETURNS event_trigger
      LANGUAGE plpgsql
      SET search_path = pg_catalog, pg_temp
      AS $fn$
      DECLARE
        schemas text[];
        tables text[];
        change record;
      BEGIN
        -- Each event has its own catalog function; calling the other one raises an error.
        IF TG_EVENT = 'sql_drop' THEN
          -- Only what the statement named: a DROP TABLE also drops the table's types and indexes.
          SELECT array_agg(coalesce(o.schema_name, CASE WHEN o.object_type = 'schema' THEN o.object_name END)),
                 array_agg(CASE
                   WHEN o.object_type IN ('table', 'view', 'materialized view', 'foreign table') THEN o.object_name
                   WHEN o.object_type IN ('table column', 'table constraint', 'default value', 'trigger', 'rule', 'policy') THEN o.address_names[2]
                 END)
            INTO schemas, tables
            FROM pg_event_trigger_dropped_objects() o
           WHERE o.original;
        ELSE
          -- A schema has no schema_name; an index stands for its table.
          SELECT array_agg(coalesce(d.schema_name, n.nspname)),
                 array_agg(CASE WHEN c.relkind IN ('r', 'p', 'v', 'm', 'f') THEN c.relname WHEN c.relkind IN ('i', 'I') THEN t.relname END)
            INTO schemas, tables
            FROM pg_event_trigger_ddl_commands() d
            LEFT JOIN pg_namespace n ON d.classid = 'pg_namespace'::regclass AND n.oid = d.objid
            LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
            LEFT JOIN pg_index i ON i.indexrelid = c.oid
            LEFT JOIN pg_class t ON t.oid = i.indrelid;
        END IF;
        FOR change IN
          -- Repos are the schemas named "<user>/<repo>": temporary schemas, public and this one
          -- have no '/'. A repo-wide notice only when the event names no table of that repo (a
          -- serial column's sequence is part of its CREATE TABLE).
          WITH touched AS (
            SELECT * FROM unnest(schemas, tables) AS u(repo, tbl) WHERE strpos(u.repo, '/') > 0
          )
          SELECT DISTINCT x.repo, x.tbl FROM touched x
           WHERE x.tbl IS NOT NULL OR NOT EXISTS (SELECT FROM touched y WHERE y.repo = x.repo AND y.tbl IS NOT NULL)
        LOOP
          -- Identifiers are at most 63 bytes: the payload stays far below NOTIFY's 8000.
          PERFORM pg_notify('${SCHEMA_EVENT_CHANNEL}', json_build_object('repo', change.repo, 'table', change.tbl, 'command', TG_TAG)::text);
        END LOOP;
      EXCEPTION WHEN OTHERS THEN
        -- Live updates are a convenience: they must never make a user's statement fail.
        -- (A cancel or a statement timeout is not caught by OTHERS and still ends the statement.)
        NULL;
      END
      $fn$;

      -- Event triggers need a superuser. Without one (a managed cluster's admin role) the
      -- migration still applies; the service then says at start-up that live updates are off.
      DO $do$
      BEGIN
        IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
          CREATE EVENT TRIGGER ${SCHEMA_EVENT_TRIGGERS[0]} ON ddl_command_end EXECUTE FUNCTION ${CONTROL_SCHEMA}.notify_schema_change();
          CREATE EVENT TRIGGER ${SCHEMA_EVENT_TRIGGERS[1]} ON sql_drop EXECUTE FUNCTION ${CONTROL_SCHEMA}.notify_schema_change();
        END IF;
      END
      $do$;
    `,
  },
  {
    version: 5,
    name: 'audit log and hourly usage',
    sql: () => `
      -- Who did what, from where, through which front end: see audit.ts. No foreign key to users:
      -- the trail outlives a deleted user, and a failed log-in may name no user at all.
      CREATE TABLE ${CONTROL_SCHEMA}.audit_log (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at timestamptz NOT NULL,
        -- null: a failed log-in of an unknown user (login_name keeps the name tried)
        user_name text,
        login_name text,
        source text,
        front_end text NOT NULL CHECK (front_end IN ('wire', 'rest', 'console', 'cli')),
        request_id text,
        action text NOT NULL,
        -- what the action was on: a repo, a key id, a DDL command tag
        target text,
        -- more about it: a share's "bob:write", a visibility "public"
        detail text,
        -- statements only: the text (bounded, literals redacted where a secret may hide) and a denial's SQLSTATE
        sql_text text,
        sqlstate text
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.audit_log (at);
      CREATE INDEX ON ${CONTROL_SCHEMA}.audit_log (user_name, at);

      -- Per user and hour, added to by every instance and worker (see usage.ts).
      CREATE TABLE ${CONTROL_SCHEMA}.usage_hourly (
        user_name text NOT NULL,
        hour timestamptz NOT NULL,
        statements bigint NOT NULL DEFAULT 0,
        rows_returned bigint NOT NULL DEFAULT 0,
        bytes_in bigint NOT NULL DEFAULT 0,
        bytes_out bigint NOT NULL DEFAULT 0,
        upload_bytes bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (user_name, hour)
      );
    `,
  },
  {
    version: 6,
    name: 'filtered catalogs: each user sees their own world',
    // Views over pg_catalog and information_schema showing only the reading role's world; the
    // policy redirects catalog references to them (src/policy/catalog-views.ts, catalog-rewrite.ts).
    sql: () => catalogViewsSql(),
  },
  {
    version: 7,
    name: 'catalog functions and reg* casts show only the caller\'s world',
    // Stand-ins for the functions that take an object's oid or name, and for reg* casts; the
    // policy redirects calls to them (src/policy/catalog-functions.ts, catalog-wrappers.ts).
    sql: () => catalogWrappersSql(),
  },
  {
    version: 8,
    name: 'filtered catalog views over tables show tableoid',
    // pg_dump identifies catalog rows by (tableoid, oid).
    sql: () => catalogTableoidSql(),
  },
  {
    version: 9,
    name: 'pg_backend_pid() shows a wire client the process id it was given',
    // Pooling by transaction moves a client between backends (src/policy/backend-pid.ts).
    sql: () => backendPidSql(),
  },
  {
    version: 10,
    name: 'pg_cancel_backend and pg_terminate_backend reach the user\'s other wire clients',
    // Given another client's process id, the stand-ins ask the front end (src/wire/signals.ts).
    sql: () => clientSignalSql(),
  },
  {
    version: 11,
    name: 'planner statistics of the system catalogs are not shown to users',
    // Their value lists name every tenant's objects (src/policy/catalog-views.ts).
    sql: () => catalogStatsSql(),
  },
  {
    version: 12,
    name: 'scoped API keys: a name, repos, access and expiry; key roles own nothing',
    sql: () => `
      -- access: full (every repo of the user, as keys were before), read or write on repos (null:
      -- every repo the user may reach, now and later). A full key reaches every repo.
      ALTER TABLE ${CONTROL_SCHEMA}.api_keys
        ADD COLUMN name text NOT NULL DEFAULT '',
        ADD COLUMN repos text[],
        ADD COLUMN access text NOT NULL DEFAULT 'full' CHECK (access IN ('full', 'read', 'write')),
        ADD COLUMN expires_at timestamptz,
        ADD CONSTRAINT api_keys_full_reaches_every_repo CHECK (access <> 'full' OR repos IS NULL);
      -- Which key acted (its public id and its name then): every audited statement and refusal.
      ALTER TABLE ${CONTROL_SCHEMA}.audit_log ADD COLUMN key_id text, ADD COLUMN key_name text;
      -- pg_notify of a scoped key's role notifies in its user's namespace (src/policy/channels.ts).
      ${tenantNotifySql()}
      -- DDL of write keys: objects lent for a command and given back to the user (key-triggers.ts).
      ${keyTriggersSql(CONTROL_SCHEMA)}
    `,
  },
  {
    version: 13,
    name: 'async queries, their results, and the query history',
    // Any instance answers for any query; results are written while the statement runs (src/control/query-records.ts, query-pages.ts).
    sql: () => `
      CREATE TABLE ${CONTROL_SCHEMA}.queries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        -- the API key (its public id) or console session that sent it: a scoped key sees its own only
        key_id text NOT NULL,
        async boolean NOT NULL,
        query_string text NOT NULL,
        query_truncated boolean NOT NULL DEFAULT false,
        status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        submitted_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz,
        row_count bigint,
        command text,
        -- [{name, type, encoding}] in column order
        fields jsonb,
        error jsonb,
        -- while running: the process running it (src/control/query-records.ts) and its last sign of life
        runner bigint,
        heartbeat_at timestamptz,
        -- its upstream backend while its statement runs: whoever finds the runner dead cancels it
        backend_pid integer,
        backend_key integer,
        rows_stored bigint NOT NULL DEFAULT 0,
        result_bytes bigint NOT NULL DEFAULT 0
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.queries (user_name, submitted_at DESC);
      -- The retention's: rows come in time order, so a BRIN index finds old ones at almost no cost per insert.
      CREATE INDEX ON ${CONTROL_SCHEMA}.queries USING brin (submitted_at);
      CREATE INDEX ON ${CONTROL_SCHEMA}.queries (status, submitted_at) WHERE status IN ('queued', 'running');
      CREATE INDEX ON ${CONTROL_SCHEMA}.queries (user_name, finished_at) WHERE result_bytes > 0;

      -- Results, written while their statement runs: pages of rows, compressed. Unlogged: a result
      -- is a cache of its statement (no WAL for it); a crash of Postgres empties the table, and a
      -- result lost so says so when read.
      CREATE UNLOGGED TABLE ${CONTROL_SCHEMA}.query_pages (
        query_id uuid NOT NULL REFERENCES ${CONTROL_SCHEMA}.queries(id) ON DELETE CASCADE,
        first_row bigint NOT NULL,
        rows integer NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (query_id, first_row)
      );
    `,
  },
  {
    version: 14,
    name: "stand-ins that answer for a pooled wire client's own session",
    // src/policy/session-stand-ins.ts
    sql: () => sessionStandInsSql(),
  },
  {
    version: 15,
    name: 'per-user limits, and the time users waited in the fair queue',
    sql: () => `
      -- An admin's overrides of the configured defaults (src/control/limits.ts); null: the default.
      CREATE TABLE ${CONTROL_SCHEMA}.user_limits (
        user_name text PRIMARY KEY REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        connections integer CHECK (connections >= 0),
        active integer CHECK (active >= 0),
        statement_timeout_ms integer CHECK (statement_timeout_ms >= 0),
        idle_in_transaction_timeout_ms integer CHECK (idle_in_transaction_timeout_ms >= 0),
        storage_bytes bigint CHECK (storage_bytes >= 0),
        time_budget_ms integer CHECK (time_budget_ms >= 0),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      -- Milliseconds the user's transactions waited for a turn (src/upstream/admission.ts).
      ALTER TABLE ${CONTROL_SCHEMA}.usage_hourly ADD COLUMN queued_ms bigint NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 16,
    name: 'the query history in pages',
    // src/control/history-pages.ts. Requests recorded before stay rows of queries until their days pass.
    sql: () => `
      CREATE TABLE ${CONTROL_SCHEMA}.history_pages (
        -- random (62 bits), part of its entries' ids
        id bigint PRIMARY KEY,
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        key_id text NOT NULL,
        -- the earliest and latest submission time of its entries (first_at: part of their ids)
        first_at timestamptz NOT NULL,
        last_at timestamptz NOT NULL,
        entries integer NOT NULL,
        failed integer NOT NULL,
        cancelled integer NOT NULL,
        -- JSON, raw-deflated: [[query_string, truncated, status, submitted_at ms, finished_at ms, row_count, command, error] or null (deleted), …]
        body bytea NOT NULL
      );
      -- Compressed already: stored out of line as it is.
      ALTER TABLE ${CONTROL_SCHEMA}.history_pages ALTER COLUMN body SET STORAGE EXTERNAL;
      CREATE INDEX ON ${CONTROL_SCHEMA}.history_pages (user_name, last_at DESC, id DESC);
      CREATE INDEX ON ${CONTROL_SCHEMA}.history_pages (user_name, key_id, last_at DESC, id DESC);
      CREATE INDEX ON ${CONTROL_SCHEMA}.history_pages (last_at);
    `,
  },
];
