/**
 * One pass over an upload: sniff the format, parse rows as the bytes arrive, infer every
 * column's type from every value, and hand each row to a sink (the staging COPY, or nothing for
 * a preview) in COPY text batches. Memory is bounded by one input chunk, one batch and the
 * preview rows, whatever the size of the file.
 */
import { PgError, SqlState } from '../shared/errors.js';
import { csvReader } from './csv.js';
import { decodeText, effectiveEncoding, peek } from './decode.js';
import { Inference, isHeaderRow } from './infer.js';
import { jsonReader } from './json.js';
import { LayoutCheck } from './layout-check.js';
import { raggedRow } from './located.js';
import { columnNames } from './names.js';
import { resolveColumns } from './overrides.js';
import { assertTextLike, detectDelimiter, detectFormat } from './sniff.js';
import { copyLine, MAX_COLUMNS, tooManyColumns, type RowSink } from './staging.js';
import type { Format, InferredColumn, ParseOptions, ParsedRow, Progress, RowReader } from './types.js';
import { xlsxReader } from './xlsx.js';

/** Rows kept for the preview answer. */
export const PREVIEW_ROWS = 20;
const SNIFF_BYTES = 64 * 1024;
const BATCH_CHARS = 512 * 1024;

/** What one pass learnt about the file. */
export interface Reading {
  format: Format;
  delimiter?: string | undefined;
  /** Whether the first row named the columns (always true for JSON objects). */
  header: boolean;
  /** The inferred columns, with the caller's overrides (ParseOptions.columns) applied. */
  columns: InferredColumn[];
  /** Data rows (the header excluded). */
  rows: number;
  /** Line of a header row that was staged as a candidate and must be left out of the table. */
  skipLine?: number | undefined;
  /** The first data rows, for previews. */
  sample: (string | null)[][];
}

/** An upload after sniffing: its format, the delimiter of CSV/TSV, and its bytes (text formats: valid UTF-8). */
export interface OpenedUpload {
  format: Format;
  delimiter?: string | undefined;
  bytes: AsyncIterable<Buffer>;
}

/** Sniffs the format (and a CSV's delimiter) from the first bytes; text formats are decoded to UTF-8. */
export async function openUpload(source: AsyncIterable<Buffer>, opts: ParseOptions): Promise<OpenedUpload> {
  const { head, rest } = await peek(source, SNIFF_BYTES);
  const format = detectFormat(head, opts.fileName, opts.format);
  if (format === 'xlsx') return { format, bytes: rest };
  assertTextLike(head);
  const text = decodeText(rest, effectiveEncoding(head, opts.encoding));
  if (format === 'json' || format === 'ndjson') return { format, bytes: text };
  const delimiter = opts.delimiter ?? (format === 'tsv' ? '\t' : undefined);
  if (delimiter !== undefined) return { format, delimiter, bytes: text };
  const sniffed = await peek(text, SNIFF_BYTES);
  return { format, delimiter: detectDelimiter(sniffed.head.toString('utf8')), bytes: sniffed.rest };
}

/** The row reader of an opened upload. */
export function readerOf(upload: OpenedUpload, opts: ParseOptions): RowReader {
  if (upload.format === 'xlsx') return xlsxReader(upload.bytes);
  if (upload.format === 'json' || upload.format === 'ndjson') return jsonReader(upload.bytes, upload.format === 'json');
  return csvReader(upload.bytes, upload.delimiter!, opts.nullValues);
}

/** Counts the bytes of `source` into `progress` as they pass. */
export async function* counted(source: AsyncIterable<Buffer>, progress: Progress): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    progress.bytes += chunk.length;
    yield chunk;
  }
}

/** Reads the whole upload into `sink` (a preview: no sink, and values that do not fit a chosen layout are counted, not refused). */
export async function readUpload(source: AsyncIterable<Buffer>, opts: ParseOptions, sink: (width: number) => Promise<RowSink>, progress: Progress, preview = false): Promise<Reading> {
  const upload = await openUpload(counted(source, progress), opts);
  return readRows(upload, opts, sink, progress, preview);
}

/**
 * Reads the rows of an opened upload into `sink`; `progress` counts the rows staged. Unless for
 * a preview, a value that does not fit the layout chosen for its column fails the upload.
 */
export async function readRows(upload: OpenedUpload, opts: ParseOptions, sink: (width: number) => Promise<RowSink>, progress: Progress, preview = false): Promise<Reading> {
  const { format, delimiter } = upload;
  const reader = readerOf(upload, opts);
  const strict = format === 'csv' || format === 'tsv';
  const keyed = () => reader.names !== undefined && reader.names.length > 0;
  const inference = new Inference();
  const firstInference = new Inference();
  const layouts = new LayoutCheck(preview ? undefined : opts.columns);
  let out: RowSink | undefined;
  let width = 0;
  let names: string[] | undefined;
  let candidate: ParsedRow | undefined;
  let repeated: boolean[] = [];
  let staged = 0;
  let batch = '';
  const sample: (string | null)[][] = [];

  for await (const rows of reader.rows()) {
    for (const row of rows) {
      if (out === undefined) {
        width = keyed() ? reader.names!.length : row.values.length;
        if (width > MAX_COLUMNS) throw tooManyColumns(width);
        out = await sink(width);
        if (!keyed() && opts.header === 'first_row') {
          names = columnNames(row.values);
          continue;
        }
        if (!keyed() && opts.header === 'auto') {
          candidate = row;
          repeated = row.values.map(() => false);
          firstInference.add(row.values);
          sample.push(row.values);
          batch += copyLine(row.line, row.values, width);
          continue;
        }
      }
      const now = keyed() ? reader.names!.length : row.values.length;
      if (now !== width) {
        if (strict) throw raggedRow(row.line, row.values.length, width);
        if (now > width) {
          if (batch) await out.write(batch);
          batch = '';
          await out.widen(now);
          width = now;
        }
      }
      inference.add(row.values);
      layouts.row(row.line, row.values);
      if (candidate) {
        const first = candidate.values;
        for (let i = 0; i < first.length; i++) if (row.values[i] === first[i]) repeated[i] = true;
      }
      if (sample.length <= PREVIEW_ROWS) sample.push(row.values);
      batch += copyLine(row.line, row.values, width);
      staged++;
    }
    progress.rows = staged;
    if (batch.length >= BATCH_CHARS && out) {
      await out.write(batch);
      batch = '';
    }
  }
  if (out === undefined) throw new PgError(SqlState.BadCopyFileFormat, 'the file holds no records', { hint: 'upload a file with at least one row' });
  if (batch) await out.write(batch);
  await out.close();

  inference.widen(width);
  let header = names !== undefined || keyed();
  let skipLine: number | undefined;
  if (candidate) {
    header = isHeaderRow(candidate.values, inference.types(), repeated);
    if (header) {
      names = columnNames(candidate.values, width);
      skipLine = candidate.line;
      sample.shift();
    } else {
      inference.merge(firstInference);
      layouts.row(candidate.line, candidate.values);
      staged++;
    }
  }
  if (keyed()) names = columnNames(reader.names!, width);
  names ??= columnNames([], width);
  if (names.length < width) names = columnNames(names, width);
  progress.rows = staged;
  const inferred = inference.types().map((t, i) => ({ name: names![i]!, ...t }));
  const columns = resolveColumns(inferred, opts.columns);
  layouts.assert(columns.map((c) => c.name));
  return { format, delimiter, header, columns, rows: staged, skipLine, sample: sample.slice(0, PREVIEW_ROWS) };
}
