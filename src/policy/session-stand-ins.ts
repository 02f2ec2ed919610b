// Stand-ins that answer for a wire client's own session when pooling by transaction moves it
// between backends (src/wire/pooling.ts): what Postgres would show it on a backend of its own.
//
// Control-plane migration 14 creates them: a change here needs a new migration.
import { CATALOG_SCHEMA } from './catalog-views.js';

/** The SQL of migration 14. */
export function sessionStandInsSql(): string {
  const c = CATALOG_SCHEMA;
  return `
    -- pg_notify answers the void value, as Postgres' own does (with a SET clause the function
    -- answered NULL): every name is qualified instead.
    CREATE OR REPLACE FUNCTION ${c}.pg_notify(channel text, payload text) RETURNS void
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    AS $fn$
      SELECT pg_catalog.pg_notify(CASE WHEN pg_catalog.starts_with(channel, pg_catalog.concat(CURRENT_USER, '/')) THEN channel ELSE pg_catalog.concat(CURRENT_USER, '/', channel) END, payload)
    $fn$;
    ALTER FUNCTION ${c}.pg_notify(text, text) RESET ALL;`;
}
