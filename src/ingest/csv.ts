/**
 * CSV and TSV rows through csv-parse (RFC 4180: quoted delimiters and newlines, `""` escapes,
 * LF, CRLF and CR line ends; a stray quote inside an unquoted field is kept as text).
 *
 * csv-parse is driven directly, one input chunk at a time, instead of as a stream: each record
 * then arrives synchronously with the parser's line counter still at that record, and without
 * a stream hop per record. It cannot tell an empty unquoted field (NULL) from `""` (an empty
 * string) in its public API, and its per-field `cast` hook costs 10× the parse; so the one
 * internal method that stores a field is wrapped to turn unquoted NULL texts into null.
 * csv-parse is pinned exactly; the csv-spectrum tests catch a change of that internal.
 */
import { Parser, CsvError } from 'csv-parse';
import { SqlState } from '../shared/errors.js';
import { located } from './located.js';
import type { ParsedRow, RowReader } from './types.js';

/** A field longer than this (often an unclosed quote swallowing the file) is refused: memory stays bounded. */
export const MAX_RECORD_CHARS = 32 * 1024 * 1024;

interface ParserInternals {
  state: { wasQuoting: boolean; record: (string | null)[]; field: { length: number } };
  __onField(): unknown;
}

class RowParser extends Parser {
  rows: ParsedRow[] = [];
  private lastEnd = 0;
  private readonly internals: ParserInternals;
  /** Whether the last field stored was quoted (tells a blank line from a line holding `""`). */
  lastQuoted = false;

  constructor(delimiter: string, nullValues: ReadonlySet<string>) {
    // csv-parse's own skip_empty_lines and max_record_size halve its speed: blank lines are
    // dropped in push(), and the field buffer is measured once per chunk in feed().
    super({ delimiter, record_delimiter: ['\r\n', '\n', '\r'], relax_column_count: true, relax_quotes: true });
    const api = (this as unknown as { api: ParserInternals }).api;
    this.internals = api;
    const parser = this;
    const store = api.__onField;
    api.__onField = function (this: ParserInternals) {
      const quoted = this.state.wasQuoting;
      parser.lastQuoted = quoted;
      const err = store.call(this);
      if (!quoted) {
        const record = this.state.record;
        const last = record.length - 1;
        const v = record[last];
        if (typeof v === 'string' && nullValues.has(v)) record[last] = null;
      }
      return err;
    };
  }

  /** Called by csv-parse for each record, synchronously inside `feed`. */
  override push(record: unknown): boolean {
    if (record === null) return false;
    // A record starts after the previous one and any blank lines, and spans the line breaks
    // inside its quoted fields. (csv-parse's own line counter counts a quoted CRLF twice.)
    const values = record as (string | null)[];
    const start = this.lastEnd + 1;
    if (values.length === 1 && (values[0] === null || values[0] === '') && !this.lastQuoted) {
      this.lastEnd = start; // a blank line
      return true;
    }
    let end = start;
    for (const v of values) {
      if (v === null) continue;
      for (let i = v.indexOf('\n'); i >= 0; i = v.indexOf('\n', i + 1)) end++;
    }
    this.lastEnd = end;
    this.rows.push({ line: start, values });
    return true;
  }

  /** Parses one chunk (or the end, with undefined); returns the records completed by it. */
  feed(chunk: Buffer | undefined): ParsedRow[] {
    let failure: unknown;
    const done = (err?: Error | null) => {
      failure = err ?? undefined;
    };
    if (chunk) this._transform(chunk, 'utf8', done); // the encoding argument is unused for Buffers
    else this._flush(done);
    if (failure !== undefined) throw csvError(failure, this.lastEnd + 1);
    if (this.internals.state.field.length > MAX_RECORD_CHARS) {
      throw located(SqlState.BadCopyFileFormat, this.lastEnd + 1, `the record at line ${this.lastEnd + 1} is longer than ${MAX_RECORD_CHARS} bytes`, { hint: 'is a quote left unclosed?' });
    }
    const rows = this.rows;
    this.rows = [];
    return rows;
  }
}

function csvError(err: unknown, line: number): unknown {
  if (!(err instanceof CsvError)) return err;
  if (err.code === 'CSV_QUOTE_NOT_CLOSED') {
    return located(SqlState.BadCopyFileFormat, line, `the quoted field of the record at line ${line} is not closed before the end of the file`);
  }
  return located(SqlState.BadCopyFileFormat, line, `malformed CSV at line ${line}: ${err.message}`);
}

/** Rows of CSV/TSV text (valid UTF-8 chunks) with `delimiter`; unquoted fields in `nullValues` are NULL. */
export function csvReader(source: AsyncIterable<Buffer>, delimiter: string, nullValues: readonly string[]): RowReader {
  return {
    unit: 'line',
    async *rows() {
      const parser = new RowParser(delimiter, new Set(nullValues));
      for await (const chunk of source) {
        const rows = parser.feed(chunk);
        if (rows.length) yield rows;
      }
      const rows = parser.feed(undefined);
      if (rows.length) yield rows;
    },
  };
}
