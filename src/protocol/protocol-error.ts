import { PgError, SqlState } from '../shared/errors.js';

/**
 * The error for bytes that do not follow the protocol. FATAL because the stream position can no
 * longer be trusted: the connection layer reports it and closes that one connection.
 */
export function protocolViolation(message: string): PgError {
  return new PgError(SqlState.ProtocolViolation, message, { severity: 'FATAL' });
}

const unanswered = new WeakSet<PgError>();

/**
 * Marks an error Postgres reports only to its log (COMMERROR: a start-up packet of impossible
 * length, a client gone before it sent one): the connection closes without an answer, since
 * the other end is not speaking the protocol, or not there.
 */
export function withoutAnswer(err: PgError): PgError {
  unanswered.add(err);
  return err;
}

/** Whether `err` closes the connection without an answer (see `withoutAnswer`). */
export function isWithoutAnswer(err: unknown): boolean {
  return err instanceof PgError && unanswered.has(err);
}

/** A builder was handed something the protocol cannot carry (a string with a NUL, an out-of-range integer). */
export function unencodable(message: string): PgError {
  return new PgError(SqlState.CharacterNotInRepertoire, message);
}

/** Describes a type byte for error messages: printable ones as a letter too. */
export function describeCode(code: number): string {
  const hex = `0x${code.toString(16).padStart(2, '0')}`;
  return code >= 0x20 && code < 0x7f ? `${hex} ('${String.fromCharCode(code)}')` : hex;
}
