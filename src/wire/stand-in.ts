/**
 * A statement the proxy refuses must fail the transaction as an error from Postgres would
 * (ReadyForQuery `E`, 25P02 after it, COMMIT answered ROLLBACK, savepoints, the implicit
 * transaction of an extended-protocol batch rolled back). Unless nothing is in flight and no
 * transaction is open — then the refusal is answered at once — the upstream runs a stand-in in
 * the refused statement's place that fails the same way, and the proxy's error replaces the
 * stand-in's in the answers.
 */
import type { PgError } from '../shared/errors.js';
import { SqlState } from '../shared/errors.js';

/** Named in every stand-in, so the upstream's error for one is known (and its log says why). */
const STAND_IN = 'statement refused by repobase';
export const STAND_IN_BYTES = Buffer.from(STAND_IN);

/**
 * Errors Postgres reports while reading a statement, before it looks at the transaction: also in
 * a failed transaction. Their stand-in is itself unreadable. Every other refusal stands for an
 * error Postgres would report after that check, so its stand-in fails at name lookup, and in a
 * failed transaction the client gets Postgres' own 25P02, as it would without the proxy.
 */
const READING_ERRORS: ReadonlySet<string> = new Set([SqlState.SyntaxError, SqlState.CharacterNotInRepertoire, SqlState.ProgramLimitExceeded, SqlState.StatementTooComplex]);

/** SQL that fails upstream as `error` would have failed there. */
export function standIn(error: PgError): string {
  return READING_ERRORS.has(error.code) ? `"${STAND_IN}"` : `SELECT FROM pg_catalog."${STAND_IN}"`;
}
