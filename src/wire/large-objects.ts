/**
 * The FunctionCall message, for large objects only. libpq's lo_* calls (psycopg2's lobject),
 * pgjdbc's LargeObjectManager and Hibernate's @Lob on Postgres call the server's large-object
 * functions by oid with this message instead of a statement, so the policy never sees a name.
 * The proxy lets through exactly the functions below, matched by the oids the server itself
 * gives them (read from its pg_proc at start), never by anything the client says. The server-side
 * `lo_import` / `lo_export` (files on the database host) are not among them. The objects belong to
 * the caller's role, and Postgres keeps each private to its owner (lo_compat_privileges off).
 */
import type { Queryable } from '../control/db.js';
import { query } from '../control/db.js';
import { decodeFunctionCall } from '../protocol/index.js';
import { PgError, SqlState } from '../shared/errors.js';

/** libpq's large-object API (fe-lobj.c), as the server names its functions. */
export const LARGE_OBJECT_FUNCTIONS = [
  'lo_open', 'lo_close', 'loread', 'lowrite', 'lo_lseek', 'lo_lseek64', 'lo_tell', 'lo_tell64',
  'lo_truncate', 'lo_truncate64', 'lo_creat', 'lo_create', 'lo_unlink',
] as const;

/** The large-object functions of the server, name by oid (pg_catalog's own, every overload). */
export async function largeObjectFunctions(db: Queryable): Promise<ReadonlyMap<number, string>> {
  const res = await query<{ oid: number; proname: string }>(
    db,
    `SELECT p.oid::int AS oid, p.proname FROM pg_catalog.pg_proc p
      WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname = ANY($1::text[])`,
    [LARGE_OBJECT_FUNCTIONS],
  );
  return new Map(res.rows.map((r) => [Number(r.oid), r.proname]));
}

/** The large-object function `frame` (a FunctionCall) calls; throws the client's error for any other. */
export function largeObjectCall(frame: Buffer, functions: ReadonlyMap<number, string>): string {
  const { functionOid } = decodeFunctionCall(frame);
  const name = functions.get(functionOid);
  if (name === undefined) {
    throw new PgError(SqlState.FeatureNotSupported, `the function call protocol message is supported only for the large-object functions (${LARGE_OBJECT_FUNCTIONS.join(', ')}); function ${functionOid} is not one`, {
      hint: 'call the function in a SELECT',
    });
  }
  return name;
}
