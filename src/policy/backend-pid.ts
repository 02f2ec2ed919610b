// `pg_backend_pid()` as a client of the wire front end sees it: the process id it was given in
// BackendKeyData, stable for its whole session, whichever backend serves it (pooling by
// transaction moves a client between backends). Top-level calls are redirected to the stand-in
// below (functions.ts), which reads the id from a setting the front end carries with the client's
// other settings (src/wire/client-state.ts), and gives the backend's own when the setting is not
// there (the REST API, session mode, a body of a function: calls there are not redirected).
//
// pg_cancel_backend and pg_terminate_backend given the client's own id signal the backend serving
// it. Given the id of another wire client (one the service gave out, not a backend's), they raise
// a notice with code SIGNAL_SQLSTATE naming what and whom; the front end takes it out of the
// answer and signals that client if it is the same user's (src/wire/signals.ts), as Postgres lets
// a role signal its own sessions. The relations that name backends by process id show the session's own the same way, so that
// `WHERE pid = pg_backend_pid()` finds it: pg_stat_activity (a filtered view already, replaced),
// pg_locks, pg_stat_ssl and pg_stat_gssapi (views of the service from now on, redirected like the
// filtered catalog: catalog-refs.ts).
//
// pg_listening_channels() leaves out the channel the front end listens on for the client's sake
// (src/wire/notifications.ts).
//
// Control-plane migration 9 creates the stand-in and the views: a change here needs a new migration.
import { CATALOG_SCHEMA, filteredCatalog, viewsSql } from './catalog-views.js';
import { SENDERS_PREFIX } from './channels.js';

/** The custom setting holding a wire client's process id (BackendKeyData) on the backend serving it. */
export const BACKEND_PID_SETTING = 'repobase.backend_pid';

/** The SQLSTATE of the notice asking the front end to signal another of the user's clients; its message is `<cancel|terminate> <process id>`. */
export const SIGNAL_SQLSTATE = 'RBSIG';

/** The lowest process id the wire front end gives out (its tags start at 1: src/wire/cancel.ts). */
const LOWEST_CLIENT_ID = 2 ** 21;

/** pg_catalog relations with a process id column → their filter. */
export const pidViews: ReadonlyMap<string, string> = new Map([
  ['pg_stat_activity', filteredCatalog.get('pg_stat_activity')!],
  ['pg_locks', 'true'],
  ['pg_stat_ssl', 'true'],
  ['pg_stat_gssapi', 'true'],
]);

/** Built-ins that take a process id: redirected to stand-ins that read the client's own as its backend's. */
export const PID_FUNCTIONS: ReadonlySet<string> = new Set(['pg_backend_pid', 'pg_cancel_backend', 'pg_terminate_backend']);

/** Built-ins whose answer holds what the wire front end keeps on a backend for itself: redirected to stand-ins that leave it out. */
export const HIDING_FUNCTIONS: ReadonlySet<string> = new Set(['pg_listening_channels']);

/** The SQL of migration 9. */
export function backendPidSql(): string {
  const c = CATALOG_SCHEMA;
  return `
    CREATE FUNCTION ${c}.pg_backend_pid() RETURNS integer LANGUAGE sql STABLE PARALLEL RESTRICTED
    BEGIN ATOMIC
      SELECT coalesce(nullif(pg_catalog.current_setting('${BACKEND_PID_SETTING}', true), '')::integer, pg_catalog.pg_backend_pid());
    END;

    -- A signal to the client's own process id goes to the backend serving it (as when it signals itself on a backend of its own).
    CREATE FUNCTION ${c}.pg_cancel_backend(pid integer) RETURNS boolean LANGUAGE sql VOLATILE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT pg_catalog.pg_cancel_backend(CASE WHEN pid = ${c}.pg_backend_pid() THEN pg_catalog.pg_backend_pid() ELSE pid END);
    END;
    CREATE FUNCTION ${c}.pg_terminate_backend(pid integer, timeout bigint DEFAULT 0) RETURNS boolean LANGUAGE sql VOLATILE PARALLEL SAFE
    BEGIN ATOMIC
      SELECT pg_catalog.pg_terminate_backend(CASE WHEN pid = ${c}.pg_backend_pid() THEN pg_catalog.pg_backend_pid() ELSE pid END, timeout);
    END;

    -- The channels of sender announcements the front end listens on for the client are not the client's.
    CREATE FUNCTION ${c}.pg_listening_channels() RETURNS SETOF text LANGUAGE sql STABLE PARALLEL RESTRICTED ROWS 10
    BEGIN ATOMIC
      SELECT c FROM pg_catalog.pg_listening_channels() AS c WHERE NOT starts_with(c, '${SENDERS_PREFIX}');
    END;

    ${viewsSql([...pidViews], { replace: true, tableoid: false, pid: `CASE WHEN %1$I = pg_catalog.pg_backend_pid() THEN ${c}.pg_backend_pid() ELSE %1$I END AS %1$I` })}

    GRANT SELECT ON ALL TABLES IN SCHEMA ${c} TO PUBLIC;`;
}

/** The SQL of migration 10: signals to another client's process id reach that client. */
export function clientSignalSql(): string {
  const c = CATALOG_SCHEMA;
  const signalling = (name: string, kind: string, params: string, args: string) => `
    CREATE OR REPLACE FUNCTION ${c}.${name}(${params}) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      IF ${c}.is_other_client(pid) THEN RETURN ${c}.signal_client('${kind}', pid); END IF;
      RETURN pg_catalog.${name}(CASE WHEN pid = ${c}.pg_backend_pid() THEN pg_catalog.pg_backend_pid() ELSE pid END${args});
    END $$;`;
  return `
    -- An id of the form the wire front end gives out, not the caller's own and not a backend's,
    -- asked by a wire client pooled by transaction (the only ones with the setting).
    CREATE FUNCTION ${c}.is_other_client(pid integer) RETURNS boolean LANGUAGE sql STABLE
    BEGIN ATOMIC
      SELECT coalesce(pg_catalog.current_setting('${BACKEND_PID_SETTING}', true), '') <> ''
        AND pid >= ${LOWEST_CLIENT_ID} AND pid <> ${c}.pg_backend_pid()
        AND NOT EXISTS (SELECT FROM pg_catalog.pg_stat_get_activity(pid));
    END;

    -- Shown whatever the client's client_min_messages: the front end takes it out of the answer.
    CREATE FUNCTION ${c}.signal_client(kind text, pid integer) RETURNS boolean LANGUAGE plpgsql VOLATILE
    SET client_min_messages = notice AS $$
    BEGIN
      RAISE NOTICE USING ERRCODE = '${SIGNAL_SQLSTATE}', MESSAGE = kind || ' ' || pid;
      RETURN true;
    END $$;
    ${signalling('pg_cancel_backend', 'cancel', 'pid integer', '')}
    ${signalling('pg_terminate_backend', 'terminate', 'pid integer, timeout bigint DEFAULT 0', ', timeout')}`;
}
