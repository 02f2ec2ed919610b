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

/** A record longer than this (often an unclosed quote swallowing the file) is refused: memory stays bounded. */
export const MAX_RECORD_CHARS = 32 * 1024 * 1024;

interface ParserInternals {
  state: { wasQuoting: boolean; record: (string | null)[] };
  __onField(): unknown;
}

class RowParser extends Parser {
  rows: ParsedRow[] = [];
  private lastEnd = 0;
  private lastEmpty = 0;

  constructor(delimiter: string, nullValues: ReadonlySet<string>) {
    super({ delimiter, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, max_record_size: MAX_RECORD_CHARS });
    const api = (this as unknown as { api: ParserInternals }).api;
    const store = api.__onField;
    api.__onField = function (this: ParserInternals) {
      const quoted = this.state.wasQuoting;
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
    // info.lines is the line the record ends on; it starts after the previous one and any blank lines.
    const start = this.lastEnd + 1 + (this.info.empty_lines - this.lastEmpty);
    this.lastEnd = this.info.lines;
    this.lastEmpty = this.info.empty_lines;
    this.rows.push({ line: start, values: record as (string | null)[] });
    return true;
  }

  /** Parses one chunk (or the end, with undefined); returns the records completed by it. */
  feed(chunk: Buffer | undefined): ParsedRow[] {
    let failure: unknown;
    const done = (err?: Error | null) => {
      failure = err ?? undefined;
    };
    if (chunk) this._transform(chunk, 'buffer', done);
    else this._flush(done);
    if (failure !== undefined) throw csvError(failure, this.lastEnd + 1);
    const rows = this.rows;
    this.rows = [];
    return rows;
  }
}

function csvError(err: unknown, line: number): unknown {
  if (!(err instanceof CsvError)) return err;
  if (err.code === 'CSV_MAX_RECORD_SIZE') {
    return located(SqlState.BadCopyFileFormat, line, `the record at line ${line} is longer than ${MAX_RECORD_CHARS} characters`, { hint: 'is a quote left unclosed?' });
  }
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
