/**
 * Running one statement for the SQL page: `POST /query/` answered as NDJSON and read as it
 * streams (a line of fields, a line per row, a closing line), cancelled by id, or downloaded as
 * CSV. Rows are parsed with exact numbers (table/exact-json.ts): a value shows exactly the digits
 * Postgres printed. No editor code here.
 */
import { send } from '../api.ts';
import { parseExactJson, type JsonValue } from '../table/exact-json.ts';

export type Row = JsonValue[];

export interface Field {
  name: string;
  /** As Postgres' format_type prints it, upper-cased: BIGINT, NUMERIC(10,2), TEXT[]. */
  type: string;
}

/** How a statement ended without an error. */
export interface Outcome {
  command: string | null;
  rowCount: number | null;
  /** The server's row cap cut the result. */
  truncated: boolean;
}

/** A failed statement: Postgres' error fields, and the HTTP status (200 when rows came before it). */
export class QueryError extends Error {
  override readonly name = 'QueryError';
  constructor(
    readonly code: string,
    message: string,
    readonly detail: string | null,
    readonly hint: string | null,
    /** 1-based character position in the statement sent, when Postgres names one. */
    readonly position: number | null,
    readonly status: number,
  ) {
    super(message);
  }
}

interface ErrorFields {
  code?: unknown;
  message?: unknown;
  detail?: unknown;
  hint?: unknown;
  position?: unknown;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

function queryError(e: ErrorFields | undefined, status: number): QueryError {
  const position = typeof e?.position === 'number' && e.position > 0 ? e.position : null;
  const message = text(e?.message) ?? `The server answered ${status}.`;
  return new QueryError(text(e?.code) ?? '', message, text(e?.detail), text(e?.hint), position, status);
}

/** The error of an answer whose status is not ok. */
export async function errorOf(res: Response): Promise<QueryError> {
  try {
    const body = (await res.json()) as { error?: ErrorFields };
    return queryError(body.error, res.status);
  } catch {
    return queryError(undefined, res.status);
  }
}

/** A random id for `X-Query-Id` (a UUID v4; crypto.randomUUID needs a secure context, this does not). */
export function newQueryId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The columns of the first NDJSON line, in order. `JSON.parse` would put a column named like an
 * integer (`"1"`) before the others, so the `fields` object is read pair by pair. (The text
 * `"fields":{` cannot occur inside the query string: a quote in a JSON string is escaped.)
 */
export function fieldsOf(line: string): Field[] {
  const at = line.indexOf('"fields":{');
  if (at === -1) return [];
  const fields: Field[] = [];
  let i = at + '"fields":{'.length;
  const readString = (): string => {
    if (line[i] !== '"') throw new SyntaxError('expected a string in fields');
    let j = i + 1;
    while (j < line.length && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
    const s = JSON.parse(line.slice(i, j + 1)) as string;
    i = j + 1;
    return s;
  };
  const skip = (c: string) => {
    while (line[i] === ' ') i++;
    if (line[i] === c) {
      i++;
      return true;
    }
    return false;
  };
  if (skip('}')) return fields;
  do {
    while (line[i] === ' ') i++;
    const name = readString();
    if (!skip(':')) throw new SyntaxError('expected ":" in fields');
    while (line[i] === ' ') i++;
    fields.push({ name, type: readString() });
  } while (skip(','));
  return fields;
}

export interface StreamHandlers {
  /** The columns, once, before any row. */
  onFields(fields: Field[]): void;
  /** Rows as they arrive, a batch per chunk read. */
  onRows(rows: Row[]): void;
}

function request(sql: string, accept: string, queryId: string, signal: AbortSignal): Promise<Response> {
  const headers = { Accept: accept, 'Content-Type': 'application/json', 'X-Query-Id': queryId };
  return send('POST', '/query/', { body: JSON.stringify({ query_string: sql }), headers, signal });
}

/**
 * Runs `sql` and streams its rows to `handlers`; resolves with how it ended, rejects with a
 * QueryError (also when it failed after rows were sent), an ApiError when the server could not
 * be reached, or an AbortError when `signal` aborted it.
 */
export async function streamQuery(sql: string, queryId: string, signal: AbortSignal, handlers: StreamHandlers): Promise<Outcome> {
  return readAnswer(await request(sql, 'application/x-ndjson', queryId, signal), signal, handlers);
}

/**
 * Reads an NDJSON query answer (`POST /query/`, or an async query's stored result) as it streams,
 * handing its columns and rows to `handlers`; resolves with how it ended, rejects as streamQuery.
 */
export async function readAnswer(res: Response, signal: AbortSignal, handlers: StreamHandlers): Promise<Outcome> {
  if (!res.ok) throw await errorOf(res);
  if (!res.body) throw queryError({ message: 'The answer had no body.' }, res.status);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = '';
  let sawFields = false;
  /** The closing line's outcome (a holder: it is set inside `line`). */
  const end: { outcome: Outcome | null } = { outcome: null };

  const line = (l: string, rows: Row[]) => {
    if (l === '') return;
    if (l.startsWith('[')) {
      rows.push(parseExactJson(l) as Row);
      return;
    }
    if (!sawFields) {
      sawFields = true;
      handlers.onFields(fieldsOf(l));
      return;
    }
    const last = JSON.parse(l) as { command?: string | null; row_count?: number | null; truncated?: boolean; error?: ErrorFields };
    if (last.error) throw queryError(last.error, res.status);
    end.outcome = { command: last.command ?? null, rowCount: last.row_count ?? null, truncated: last.truncated === true };
  };

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pending += value;
      const rows: Row[] = [];
      try {
        let start = 0;
        for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n', start)) {
          line(pending.slice(start, nl), rows);
          start = nl + 1;
        }
        pending = pending.slice(start);
      } finally {
        // The rows before an error line are shown with the error.
        if (rows.length) handlers.onRows(rows);
      }
    }
  } catch (err) {
    if (err instanceof QueryError || (err instanceof DOMException && err.name === 'AbortError')) throw err;
    if (signal.aborted) throw new DOMException('The statement was cancelled.', 'AbortError');
    throw queryError({ code: '08006', message: 'The connection was lost before the whole result arrived.', hint: 'Run the statement again.' }, 0);
  } finally {
    reader.releaseLock();
  }
  const rows: Row[] = [];
  try {
    line(pending.trim(), rows);
  } finally {
    if (rows.length) handlers.onRows(rows);
  }
  if (!end.outcome) throw queryError({ code: '08006', message: 'The result ended before its last line.', hint: 'Run the statement again.' }, 0);
  return end.outcome;
}

/** Asks the server to cancel the statement sent with `X-Query-Id: id`; failures are ignored (aborting the request stops it too). */
export async function cancelQuery(queryId: string): Promise<void> {
  try {
    await send('POST', `/query/${encodeURIComponent(queryId)}/cancel`);
  } catch {
    // the request's own abort ends the statement as well
  }
}

/** The result of `sql` as a CSV file (values in Postgres' text form, NULL as an empty field). */
export async function queryCsv(sql: string, queryId: string, signal: AbortSignal): Promise<Blob> {
  const res = await request(sql, 'text/csv', queryId, signal);
  if (!res.ok) throw await errorOf(res);
  try {
    return await res.blob();
  } catch (err) {
    if (signal.aborted) throw err;
    // A CSV answer that failed after rows were sent is cut off on purpose: never save half a file.
    throw queryError({ code: '08006', message: 'The CSV ended early: the statement failed after rows were sent, or the connection was lost.', hint: 'Run the statement to see its error.' }, 0);
  }
}

/** Saves `blob` as a file named `name` through a temporary link. */
export function saveFile(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // Some browsers read the URL after click() returns.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
