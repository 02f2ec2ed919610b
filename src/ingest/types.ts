/**
 * Shared vocabulary of the ingest library: file formats, import options, parsed rows and the
 * column types an upload can be given.
 */

import type { DateLayout, Layout } from './written.js';

/** File formats an upload may be in. */
export const FORMATS = ['csv', 'tsv', 'json', 'ndjson', 'xlsx'] as const;
export type Format = (typeof FORMATS)[number];

/** `create`: a new table (42P07 if it exists); `replace`: swap the table's contents and schema; `append`: add rows. */
export const MODES = ['create', 'replace', 'append'] as const;
export type ImportMode = (typeof MODES)[number];

/** Whether the first row of a CSV/TSV/XLSX file names the columns. */
export const HEADER_MODES = ['auto', 'first_row', 'none'] as const;
export type HeaderMode = (typeof HEADER_MODES)[number];

/** The SQL types inference chooses from, as `format_type` spells them. */
export type ColumnType = 'boolean' | 'bigint' | 'numeric' | 'double precision' | 'date' | 'timestamp without time zone' | 'timestamp with time zone' | 'jsonb' | 'text';

/**
 * The SQL types a column of an upload may be given, as `format_type` spells them: the inferred
 * ones, and those an override may choose besides (overrides.ts; `numeric(p,s)` with a typmod).
 */
export type SqlType = ColumnType | 'integer' | 'uuid' | `numeric(${number},${number})`;

/** The caller's choice for one column of the file: a new name, a type, how its values are written; or nothing (keep). */
export interface ColumnOverride {
  name?: string | undefined;
  type?: SqlType | undefined;
  /** Every value of the column must be written so (written.ts); each is read by it. */
  written?: Layout | undefined;
}

/** One record of the file: where it starts (line, or row/element for XLSX/JSON) and its cells; null is SQL NULL. */
export interface ParsedRow {
  line: number;
  values: (string | null)[];
}

/**
 * A reader turns the upload's bytes into batches of rows. `names` is set by formats whose
 * records carry their own column names (JSON keys); it may grow while reading.
 */
export interface RowReader {
  readonly names?: readonly string[];
  /** What a row's `line` counts: "line" (text formats), "row" (XLSX), "element" (JSON arrays). */
  readonly unit: 'line' | 'row' | 'element';
  rows(): AsyncIterable<ParsedRow[]>;
}

/** Options of one upload, after validation. */
export interface ParseOptions {
  format?: Format | undefined;
  header: HeaderMode;
  /** One character; auto-detected when undefined. */
  delimiter?: string | undefined;
  /** Unquoted texts read as NULL; default: the empty unquoted field only. */
  nullValues: readonly string[];
  /** A WHATWG encoding label (utf-8, latin1, windows-1252, utf-16le, shift_jis…). */
  encoding: string;
  /** The file's name, for format sniffing by extension. */
  fileName?: string | undefined;
  /** Names and types chosen by the caller, one entry per column of the file, in order (overrides.ts). */
  columns?: readonly ColumnOverride[] | undefined;
}

/**
 * How the values of a column are written, when not as Postgres writes them: numbers with their
 * thousands grouped by commas, or dates (and timestamps) in a layout of written.ts, with times
 * on a 12-hour clock or not. The loader reads each value by it (convert.ts).
 */
export interface Written {
  layout: Layout;
  /** Times with AM/PM. */
  clock12?: boolean | undefined;
}

/** A column of the result: inferred, or as an override chose it. */
export interface InferredColumn {
  name: string;
  type: SqlType;
  /** How its values are written, when not as Postgres writes them (ISO dates, bare numbers). */
  written?: Written | undefined;
  /** Dates that read both month first and day first (no day over 12): the layouts, and the column is TEXT. */
  ambiguous?: DateLayout[] | undefined;
}

/** How an import loaded its rows: COPY of the file itself (direct.ts), or row by row. */
export interface LoadPath {
  path: 'direct' | 'rows';
  /** Times a wrong type guess made the direct load start over. */
  restarts?: number | undefined;
  /** Columns loaded as text and given their type at the end (one rewrite of the table). */
  converted?: number | undefined;
  /** Why a CSV/TSV upload was loaded row by row. */
  reason?: string | undefined;
}

/** What an import did. */
export interface ImportOutcome {
  format: Format;
  delimiter?: string | undefined;
  header: boolean;
  columns: InferredColumn[];
  rows: number;
  load?: LoadPath | undefined;
}

/** Counters a running import reports. */
export interface Progress {
  bytes: number;
  rows: number;
}
