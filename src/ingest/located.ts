/** Errors that point into the uploaded file: the message names the place, `extra.line` carries it. */
import { PgError, SqlState, type PgErrorFields } from '../shared/errors.js';

/** A PgError about the record at `line` (a line, or an XLSX row number). */
export function located(code: string, line: number, message: string, fields: PgErrorFields = {}): PgError {
  return new PgError(code, message, { ...fields, extra: { ...fields.extra, line: String(line) } });
}

/** The line an error points at, if it does. */
export function lineOf(err: PgError): number | undefined {
  const line = err.extra?.line;
  return line === undefined ? undefined : Number(line);
}

/** A CSV record at `line` with `fields` fields where the first record had `width`. */
export function raggedRow(line: number, fields: number, width: number): PgError {
  return located(SqlState.BadCopyFileFormat, line, `line ${line} has ${fields} fields; expected ${width} like the first line`, {
    hint: 'every line of a CSV file must have the same number of fields (quote fields that contain the delimiter)',
  });
}
