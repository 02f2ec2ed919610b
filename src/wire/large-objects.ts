/**
 * The FunctionCall message, for large objects only. libpq's lo_* calls (psycopg2's lobject),
 * pgjdbc's LargeObjectManager and Hibernate's @Lob on Postgres call the server's large-object
 * functions by oid with this message instead of a statement, so the policy never sees a name.
 * The proxy lets through exactly the functions below, matched by the oids the server itself
 * gives them (read from its pg_proc at start), never by anything the client says. The server-side
 * `lo_import` / `lo_export` (files on the database host) are not among them. The objects belong to
 * the caller's role, and Postgres keeps each private to its owner (lo_compat_privileges off).
 */
import { decodeFunctionCall } from '../protocol/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';

/** libpq's large-object API (fe-lobj.c), as the server names its functions. */
export const LARGE_OBJECT_FUNCTIONS = [
  'lo_open', 'lo_close', 'loread', 'lowrite', 'lo_lseek', 'lo_lseek64', 'lo_tell', 'lo_tell64',
  'lo_truncate', 'lo_truncate64', 'lo_creat', 'lo_create', 'lo_unlink',
] as const;

const SQL = `SELECT p.oid::int AS oid, p.proname FROM pg_catalog.pg_proc p
  WHERE p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace AND p.proname IN (${LARGE_OBJECT_FUNCTIONS.map((n) => `'${n}'`).join(', ')})`;

/** The server's large-object functions, name by oid. */
export interface LargeObjectFunctions {
  /** The function `frame` (a FunctionCall) calls; throws the client's error for any other. */
  call(frame: Buffer): string;
}

/** Reads the functions' oids from the server once (again after a failure, when next asked). */
export function loadLargeObjectFunctions(query: (sql: string) => Promise<{ rows: { oid: number; proname: string }[] }>, log: Logger): LargeObjectFunctions {
  let names: ReadonlyMap<number, string> | undefined;
  let loading: Promise<void> | undefined;
  const load = () => {
    loading ??= query(SQL).then(
      ({ rows }) => void (names = new Map(rows.map((r) => [Number(r.oid), r.proname]))),
      (err: unknown) => {
        log.warn({ err }, 'the oids of the large-object functions could not be read: FunctionCall is refused meanwhile');
        setTimeout(() => (loading = undefined), 10_000).unref();
      },
    );
  };
  load();
  return {
    call(frame: Buffer): string {
      const { functionOid } = decodeFunctionCall(frame);
      if (names === undefined) {
        load();
        throw new PgError(SqlState.CannotConnectNow, 'the large-object functions of the server are not known yet', { hint: 'try again in a moment' });
      }
      const name = names.get(functionOid);
      if (name === undefined) {
        throw new PgError(SqlState.FeatureNotSupported, `the function call protocol message is supported only for the large-object functions (${LARGE_OBJECT_FUNCTIONS.join(', ')}); function ${functionOid} is not one`, {
          hint: 'call the function in a SELECT',
        });
      }
      return name;
    },
  };
}

/** Throws the client's error for a FunctionCall that may not go upstream: inside an extended batch, with no functions known, or calling another. */
export function checkFunctionCall(functions: LargeObjectFunctions | undefined, frame: Buffer, inBatch: boolean): void {
  if (inBatch) throw new PgError(SqlState.FeatureNotSupported, 'a function call cannot come inside an extended-protocol batch', { hint: 'send Sync first' });
  if (functions === undefined) throw new PgError(SqlState.FeatureNotSupported, 'the function call protocol message is not supported', { hint: 'call the function in a SELECT' });
  functions.call(frame);
}
