/** Errors that point into the uploaded file: the message names the place, `extra.line` carries it. */
import { PgError, type PgErrorFields } from '../shared/errors.js';

/** A PgError about the record at `line` (a line, or an XLSX row number). */
export function located(code: string, line: number, message: string, fields: PgErrorFields = {}): PgError {
  return new PgError(code, message, { ...fields, extra: { ...fields.extra, line: String(line) } });
}

/** The line an error points at, if it does. */
export function lineOf(err: PgError): number | undefined {
  const line = err.extra?.line;
  return line === undefined ? undefined : Number(line);
}
