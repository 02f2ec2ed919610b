/**
 * Format and delimiter detection from the first bytes of an upload: the file name's extension
 * first, then the content (a ZIP signature is XLSX, `[` starts JSON, `{` NDJSON, other text is
 * CSV). Binary data that is none of these is refused here, before anything is loaded.
 */
import { PgError, SqlState } from '../shared/errors.js';
import type { Format } from './types.js';

const BY_EXTENSION: Readonly<Record<string, Format>> = {
  csv: 'csv',
  tsv: 'tsv',
  tab: 'tsv',
  json: 'json',
  ndjson: 'ndjson',
  jsonl: 'ndjson',
  xlsx: 'xlsx',
};

/** Candidate delimiters, in order of preference when several fit equally. */
const DELIMITERS = [',', '\t', ';', '|'] as const;

export function emptyFile(): PgError {
  return new PgError(SqlState.BadCopyFileFormat, 'the file is empty', { hint: 'upload a file with at least one row' });
}

function notText(): PgError {
  return new PgError(SqlState.BadCopyFileFormat, 'the file is binary data in no supported format', {
    hint: 'upload CSV, TSV, JSON, NDJSON or XLSX (the first sheet is read)',
  });
}

function isZip(head: Buffer): boolean {
  return head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04;
}

/** Control characters other than tab, CR, LF and form feed: plenty of them means binary. */
function looksBinary(head: Buffer): boolean {
  let control = 0;
  const n = Math.min(head.length, 8192);
  for (let i = 0; i < n; i++) {
    const b = head[i]!;
    if (b === 0) return true;
    if (b < 32 && b !== 9 && b !== 10 && b !== 13 && b !== 12) control++;
  }
  return control > n / 20;
}

function firstSignificant(head: Buffer): number | undefined {
  let i = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x09 || head[i] === 0x0a || head[i] === 0x0d)) i++;
  return head[i];
}

/**
 * The format of an upload from its name and first bytes; `declared` wins when given.
 * UTF-16 files (by byte order mark) are text: their format comes from the name, else CSV.
 */
export function detectFormat(head: Buffer, fileName: string | undefined, declared?: Format): Format {
  const utf16 = (head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff);
  if (head.length === 0 || (!utf16 && firstSignificant(head) === undefined)) throw emptyFile();
  if (declared) return declared;
  const ext = fileName?.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1];
  const byName = ext ? BY_EXTENSION[ext] : undefined;
  if (byName) return byName;
  if (isZip(head)) return 'xlsx';
  if (utf16) return 'csv';
  if (looksBinary(head)) throw notText();
  const c = firstSignificant(head);
  if (c === 0x5b) return 'json';
  if (c === 0x7b) return 'ndjson';
  return 'csv';
}

/** Refuses text formats whose bytes are plainly binary (a ZIP or a PDF named .csv). */
export function assertTextLike(head: Buffer): void {
  const utf16 = (head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff);
  if (!utf16 && (isZip(head) || looksBinary(head))) throw notText();
}

/** Counts of each candidate delimiter on each of the first records (quotes respected). */
function countsPerRecord(sample: string, maxRecords: number): number[][] {
  const rows: number[][] = [];
  let counts = DELIMITERS.map(() => 0);
  let quoted = false;
  for (let i = 0; i < sample.length && rows.length < maxRecords; i++) {
    const c = sample[i]!;
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === '\n') {
      rows.push(counts);
      counts = DELIMITERS.map(() => 0);
    } else if (!quoted) {
      const k = DELIMITERS.indexOf(c as (typeof DELIMITERS)[number]);
      if (k >= 0) counts[k]!++;
    }
  }
  // The last line of a sample cut short is partial, unless the sample is the whole file.
  if (rows.length === 0) rows.push(counts);
  return rows;
}

/**
 * The delimiter of a CSV sample: the candidate that appears the same number of times (> 0) on
 * every sampled record, most often; else the most frequent on the first record; else a comma.
 */
export function detectDelimiter(sample: string): string {
  // Blank lines (and single-column files) count nothing; they neither confirm nor refute a candidate.
  const counted = countsPerRecord(sample, 50).filter((r) => r.some((n) => n > 0));
  const rows = counted.length ? counted : [DELIMITERS.map(() => 0)];
  let best: string | undefined;
  let bestCount = 0;
  DELIMITERS.forEach((d, k) => {
    const first = rows[0]![k]!;
    if (first > bestCount && rows.every((r) => r[k] === first)) {
      best = d;
      bestCount = first;
    }
  });
  if (best) return best;
  const first = rows[0]!;
  const k = first.indexOf(Math.max(...first));
  return first[k]! > 0 ? DELIMITERS[k]! : ',';
}
