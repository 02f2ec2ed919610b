/**
 * The three shapes of a query answer, written piece by piece as rows arrive:
 *
 * - JSON (default): `{"query_string","fields","data":[…],"command","row_count"}`, then
 *   `"truncated":true` when the row cap cut it, or an `"error"` member when the statement failed
 *   after rows were already sent (the status is then already 200: clients check for `error`).
 * - NDJSON (`Accept: application/x-ndjson`): a first line `{"query_string","fields"}`, one JSON
 *   array per row, and a last line `{"command","row_count"}` (+ `"truncated":true`) or
 *   `{"error":{…}}`. Rows are arrays, so the closing object line cannot be mistaken for one.
 * - CSV (`Accept: text/csv`): a header line of the column names, then the values as Postgres
 *   prints them; NULL is an empty field, the empty string `""`. CSV has no place for an error:
 *   a failure after rows were sent cuts the connection so no client takes the rows as complete.
 *   A cut by the row cap is told by the HTTP trailer `X-Repobase-Truncated: true`.
 */
import type { PgError } from '../shared/errors.js';
import { csvField, encodeRow } from '../upstream/query-encode.js';
import type { Column, Row } from '../upstream/query-run.js';
import type { ValueEncoding } from '../upstream/query-types.js';
import { errorObject } from './errors.js';

export type ResultFormat = 'json' | 'ndjson' | 'csv';

/** Content-Type of each format. */
export const CONTENT_TYPES: Readonly<Record<ResultFormat, string>> = {
  json: 'application/json; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
};

/** The format asked for by `Accept`: the first of its media types we write; JSON otherwise. */
export function negotiateFormat(accept: string | undefined): ResultFormat {
  if (accept === undefined || accept === '*/*' || accept === 'application/json') return 'json'; // what most clients send
  for (const part of accept.split(',')) {
    const type = part.split(';')[0]?.trim().toLowerCase();
    if (type === 'application/json') return 'json';
    if (type === 'application/x-ndjson') return 'ndjson';
    if (type === 'text/csv') return 'csv';
  }
  return 'json';
}

/** How a result ended. */
export interface Outcome {
  command: string | null;
  rowCount: number | null;
  truncated: boolean;
}

/** Writes the pieces of one answer in one format. */
export interface ResultWriter {
  head(): string;
  rows(rows: readonly Row[]): string;
  end(outcome: Outcome): string;
  /** The closing piece after a failure mid-stream, or undefined when the format has none (CSV). */
  failed(error: PgError): string | undefined;
}

/** The writer of one answer: `fields` and the value encoders are fixed here, once. */
export function createWriter(format: ResultFormat, queryString: string, columns: readonly Column[]): ResultWriter {
  const encodings: ValueEncoding[] = columns.map((c) => c.type.encoding);
  const fields = fieldsJson(columns);
  const query = JSON.stringify(queryString);
  const closing = (o: Outcome) => `"command":${JSON.stringify(o.command)},"row_count":${JSON.stringify(o.rowCount)}${o.truncated ? ',"truncated":true' : ''}`;
  switch (format) {
    case 'json': {
      let first = true;
      return {
        head: () => `{"query_string":${query},"fields":${fields},"data":[`,
        rows: (rows) => {
          let out = '';
          for (const row of rows) {
            out += (first ? '' : ',') + encodeRow(row, encodings);
            first = false;
          }
          return out;
        },
        end: (o) => `],${closing(o)}}\n`,
        failed: (e) => `],"error":${JSON.stringify(errorObject(e))}}\n`,
      };
    }
    case 'ndjson':
      return {
        head: () => `{"query_string":${query},"fields":${fields}}\n`,
        rows: (rows) => {
          let out = '';
          for (const row of rows) out += encodeRow(row, encodings) + '\n';
          return out;
        },
        end: (o) => `{${closing(o)}}\n`,
        failed: (e) => `${JSON.stringify({ error: errorObject(e) })}\n`,
      };
    case 'csv':
      return {
        head: () => (columns.length ? columns.map((c) => csvField(c.name)).join(',') + '\r\n' : ''),
        rows: (rows) => {
          let out = '';
          for (const row of rows) out += row.map(csvField).join(',') + '\r\n';
          return out;
        },
        end: () => '',
        failed: () => undefined,
      };
    default:
      return assertNever(format);
  }
}

/**
 * `fields` as JSON: column names to type names, in the columns' order. (An object built first
 * would put names that look like array indexes, `"1"`, ahead of the others, out of line with the
 * rows' values.) Names are unique (row-descriptions.ts uniqueNames).
 */
export function fieldsJson(columns: readonly Column[]): string {
  let out = '{';
  for (let i = 0; i < columns.length; i++) out += (i ? ',' : '') + JSON.stringify(columns[i]!.name) + ':' + JSON.stringify(columns[i]!.type.name);
  return out + '}';
}

function assertNever(x: never): never {
  throw new Error(`unexpected format ${String(x)}`);
}
