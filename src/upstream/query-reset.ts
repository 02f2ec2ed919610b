/**
 * The reset of the previous REST request's settings, sent ahead of a statement (query-run.ts):
 * how it is sent, where its answer ends, and when the statement must go again behind it alone.
 *
 * It rides in the same Query: `RESET ALL; <statement>`, one implicit transaction, one
 * ReadyForQuery, one flush by Postgres, one read here. Postgres reads the whole string before it
 * runs the reset, so this is only sound while the settings that decide how it reads text
 * (standard_conforming_strings, client_encoding) are as at login, as the policy's parser assumed:
 * the session follows them through ParameterStatus. When one has changed, the reset goes first as a
 * Query of its own, in the same write (Postgres reads the next message only after answering the
 * previous one). Measured with pgbench against the earlier extended-protocol batch
 * (`Parse/Bind/Execute RESET ALL`, `Parse/Bind/Describe/Execute`, `Sync`): 21–24 µs of Postgres CPU
 * per one-row select instead of 27–29 (20–21 with no reset). If the statement fails, its
 * transaction takes the reset with it; the next request resets again. After a statement the policy
 * found setting-free (it cannot have changed a setting: a SELECT of constants, built-in functions
 * and Postgres' own catalogs, policy/setting-free.ts), the session is left marked clean and the
 * next request skips the reset: a Citus coordinator spends 60–130 µs of CPU on each RESET ALL.
 * Postgres refuses a few statements inside a transaction block (VACUUM, CREATE INDEX
 * CONCURRENTLY, CREATE DATABASE…: 25001, before they do anything), and Citus DDL that it
 * propagates to its workers inside a multi-statement query: those are run again after the reset
 * as a Query of its own.
 */
import { PgError, SqlState } from '../shared/errors.js';
import { BackendCode, buildQuery } from '../protocol/index.js';

/**
 * How the previous request's settings are reset before the statement: not at all (a fresh
 * session), as the first statement of the same Query (one transaction), or as a Query of its own.
 */
export type Reset = 'none' | 'prefix' | 'alone';

const RESET = 'RESET ALL';
const RESET_PREFIX = `${RESET}; `;
const RESET_QUERY = buildQuery(RESET);

/** The message that ends the answer to the reset. */
export const RESET_ENDS_AT: Record<Reset, number | undefined> = {
  none: undefined,
  prefix: BackendCode.CommandComplete,
  alone: BackendCode.ReadyForQuery,
};

/** The bytes that run `sql` after the reset. */
export function request(sql: string, reset: Reset): Buffer {
  switch (reset) {
    case 'none':
      return buildQuery(sql);
    case 'prefix':
      return buildQuery(RESET_PREFIX + sql);
    case 'alone':
      return Buffer.concat([RESET_QUERY, buildQuery(sql)]);
  }
}

/**
 * Whether Postgres refused the statement for the reset in front of it, before doing anything: a
 * statement that cannot run in a transaction block (25001), or DDL that Citus propagates to its
 * workers, which it cannot do from a multi-statement query (42601). Either runs again after the
 * reset as a Query of its own; nothing else pays for the second round trip.
 */
export function refusesPrefix(err: PgError): boolean {
  return err.code === SqlState.ActiveSqlTransaction || (err.code === SqlState.SyntaxError && err.message === 'cannot insert multiple commands into a prepared statement');
}

/** An error of the statement, its position counted in the statement rather than in the Query that prefixed it. */
export function unprefixed(err: PgError): PgError {
  if (err.position === undefined || err.position <= RESET_PREFIX.length) return err;
  return new PgError(err.code, err.message, { detail: err.detail, hint: err.hint, severity: err.severity, extra: err.extra, fromUpstream: err.fromUpstream, position: err.position - RESET_PREFIX.length });
}
