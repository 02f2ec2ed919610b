// `pg_backend_pid()` as a client of the wire front end sees it: the process id it was given in
// BackendKeyData, stable for its whole session, whichever backend serves it (pooling by
// transaction moves a client between backends). Top-level calls are redirected to the stand-in
// below (functions.ts), which reads the id from a setting the front end carries with the client's
// other settings (src/wire/client-state.ts), and gives the backend's own when the setting is not
// there (the REST API, session mode, a body of a function: calls there are not redirected).
//
// The relations that name backends by process id show the session's own the same way, so that
// `WHERE pid = pg_backend_pid()` finds it: pg_stat_activity (a filtered view already, replaced),
// pg_locks, pg_stat_ssl and pg_stat_gssapi (views of the service from now on, redirected like the
// filtered catalog: catalog-refs.ts).
//
// Control-plane migration 9 creates the stand-in and the views: a change here needs a new migration.
import { CATALOG_SCHEMA, filteredCatalog, viewsSql } from './catalog-views.js';

/** The custom setting holding a wire client's process id (BackendKeyData) on the backend serving it. */
export const BACKEND_PID_SETTING = 'repobase.backend_pid';

/** pg_catalog relations with a process id column → their filter. */
export const pidViews: ReadonlyMap<string, string> = new Map([
  ['pg_stat_activity', filteredCatalog.get('pg_stat_activity')!],
  ['pg_locks', 'true'],
  ['pg_stat_ssl', 'true'],
  ['pg_stat_gssapi', 'true'],
]);

/** The SQL of migration 9. */
export function backendPidSql(): string {
  const c = CATALOG_SCHEMA;
  return `
    CREATE FUNCTION ${c}.pg_backend_pid() RETURNS integer LANGUAGE sql STABLE PARALLEL RESTRICTED
    BEGIN ATOMIC
      SELECT coalesce(nullif(pg_catalog.current_setting('${BACKEND_PID_SETTING}', true), '')::integer, pg_catalog.pg_backend_pid());
    END;

    ${viewsSql([...pidViews], { replace: true, tableoid: false, pid: `CASE WHEN %1$I = pg_catalog.pg_backend_pid() THEN ${c}.pg_backend_pid() ELSE %1$I END AS %1$I` })}

    GRANT SELECT ON ALL TABLES IN SCHEMA ${c} TO PUBLIC;`;
}
