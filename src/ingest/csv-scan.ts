/**
 * The byte-level CSV scanner of the direct load (direct.ts). It reads the upload's UTF-8 chunks
 * once, as they arrive, without a string per field, and
 * - infers every column's type (column-inference.ts),
 * - checks what csv.ts checks, with the same errors and lines: ragged rows, an unclosed quote,
 *   an endless field, too many columns,
 * - finds the bytes Postgres must not see: blank lines (csv.ts skips them) and the first record
 *   (when it is the header), as (start, end, kind) ranges of the stream,
 * - notices what Postgres' CSV reader would read otherwise than csv.ts (a quote inside an unquoted
 *   field or after a closing quote, mixed line ends, a `\.` line) and stops: `incompatible`,
 * - once told how (rewrite()), finds the values to rewrite for Postgres (convert.ts): ranges of
 *   the stream, each with the bytes that take its place.
 * Measured on the 200 MB benchmark file: ~180 MB/s (~330 without inference), where csv-parse
 * alone ran ~43 MB/s, and ~24 MB/s with string classification and COPY text encoding.
 */
import { SqlState } from '../shared/errors.js';
import { ColumnInference, fieldText } from './column-inference.js';
import type { Rewriter } from './convert.js';
import { MAX_RECORD_CHARS } from './csv.js';
import type { ChosenType } from './infer.js';
import { located, raggedRow } from './located.js';
import { MAX_COLUMNS, tooManyColumns } from './staging.js';
import type { HeaderMode } from './types.js';

const QUOTE = 34;
const LF = 10;
const CR = 13;
const BACKSLASH = 92;
const DOT = 46;

const START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
const QUOTE_SEEN = 3;
const AFTER_CR = 4;

const EOL_LF = 1;
const EOL_CR = 2;
const EOL_CRLF = 3;

/** What a skipped range of the stream was: a blank line, or (part of) the first record. */
export const SKIP_BLANK = 0;
export const SKIP_FIRST = 1;
/** A range to replace: by the next of the replacements (takeReplacements()). */
export const REPLACE = 2;

/** Scans one upload's CSV bytes, chunk after chunk (see the top of this file). */
export class CsvScan {
  /** Fields of the first record; -1 until it has ended. */
  width = -1;
  /** The first record's values (NULL as null). */
  readonly first: (string | null)[] = [];
  /** Records after the first. */
  rows = 0;
  /** Why Postgres would read this file differently from csv.ts, once that is seen. */
  incompatible: string | undefined;
  /** Ranges not to forward, found since the last takeSkips(): (start, end, SKIP_*) triples. */
  private skips: number[] = [];
  /** Inference over the records after the first (once that has ended and when inferring). */
  private columns: ColumnInference | undefined;
  /** Per column, how its values are rewritten for Postgres (rewrite()). */
  private rewriters: readonly (Rewriter | undefined)[] = [];
  /** Whether the first record's values are rewritten too (it is not the header). */
  private rewriteFirst = false;
  /** The bytes of the REPLACE ranges found since the last takeReplacements(), in order. */
  private replacements: Buffer[] = [];
  /** Stream offset where the current field's bytes start (after its opening quote), while they are carried. */
  private fieldStart = 0;

  private offset = 0;
  private state = START;
  private escaped = false;
  private carry: Buffer[] = [];
  private carryLength = 0;
  private fieldIndex = 0;
  /** The record's first field is an empty or NULL unquoted text: the record may be a blank line. */
  private pendingBlank = false;
  private pendingNull = false;
  private recordStart = 0;
  private lastEnd = 0;
  /** Line feeds inside the quoted fields of the current record (csv.ts counts lines so). */
  private newlines = 0;
  /** SKIP_* of the record that just ended, if skipped: a LF after its CR belongs to the range. */
  private previousSkip = -1;
  /** The EOL_* of the first line end; Postgres takes the first one for all. */
  private eol = 0;
  /** The stream's last two bytes so far (-1: none), for a `\.` split between chunks. */
  private beforeLast = -1;
  private last = -1;

  constructor(
    private readonly delimiter: number,
    private readonly nullValue: Buffer,
    private readonly infer: boolean,
  ) {}

  /** The line the current record starts on. */
  get line(): number {
    return this.lastEnd + 1;
  }

  /** Scans one chunk (valid UTF-8). Throws the errors csv.ts would; stops early once incompatible. */
  feed(buf: Buffer): void {
    if (this.incompatible !== undefined) return;
    this.checkEndMarker(buf);
    const n = buf.length;
    const d = this.delimiter;
    let i = 0;
    let fs = 0; // where the current field's bytes start in this chunk (0: in an earlier one)
    while (i < n && this.incompatible === undefined) {
      switch (this.state) {
        case START: {
          const c = buf[i]!;
          if (c === QUOTE) {
            this.state = QUOTED;
            this.escaped = false;
            fs = ++i;
            this.fieldStart = this.offset + fs;
          } else if (c === d || c === LF || c === CR) {
            this.field(buf, i, i, false);
            i = this.afterField(buf, i, c);
          } else {
            this.state = UNQUOTED;
            fs = i++;
            this.fieldStart = this.offset + fs;
          }
          break;
        }
        case UNQUOTED: {
          let c = 0;
          while (i < n) {
            c = buf[i]!;
            if (c === d || c === LF || c === CR || c === QUOTE) break;
            i++;
          }
          if (i === n) break;
          if (c === QUOTE) {
            this.incompatible = 'a quote inside an unquoted field';
            break;
          }
          this.field(buf, fs, i, false);
          i = this.afterField(buf, i, c);
          break;
        }
        case QUOTED: {
          while (i < n) {
            const c = buf[i]!;
            if (c === QUOTE) break;
            if (c === LF) this.newlines++;
            i++;
          }
          if (i < n) {
            this.state = QUOTE_SEEN;
            i++;
          }
          break;
        }
        case QUOTE_SEEN: {
          const c = buf[i]!;
          if (c === QUOTE) {
            this.escaped = true;
            this.state = QUOTED;
            i++;
          } else if (c === d || c === LF || c === CR) {
            // The closing quote is the byte before, or the last byte carried from the chunk before.
            if (i === 0) this.dropCarriedQuote();
            this.field(buf, fs, i === 0 ? 0 : i - 1, true);
            i = this.afterField(buf, i, c);
          } else {
            this.incompatible = 'text after a closing quote';
          }
          break;
        }
        default: {
          // AFTER_CR: a CR ended the record; a LF right after it belongs to that line end.
          if (buf[i] === LF) {
            this.lineEnd(EOL_CRLF);
            if (this.previousSkip >= 0) this.skips.push(this.offset + i, this.offset + i + 1, this.previousSkip);
            i++;
          } else this.lineEnd(EOL_CR);
          this.recordStart = this.offset + i;
          this.state = START;
        }
      }
    }
    if (this.incompatible === undefined && (this.state === UNQUOTED || this.state === QUOTED || this.state === QUOTE_SEEN)) {
      const rest = buf.subarray(fs, n);
      this.carry.push(Buffer.from(rest));
      this.carryLength += rest.length;
      if (this.carryLength > MAX_RECORD_CHARS) {
        throw located(SqlState.BadCopyFileFormat, this.line, `the record at line ${this.line} is longer than ${MAX_RECORD_CHARS} bytes`, { hint: 'is a quote left unclosed?' });
      }
    }
    this.offset += n;
  }

  /** The end of the stream: the last record may lack its line end. */
  end(): void {
    if (this.incompatible !== undefined) return;
    if (this.state === QUOTED) {
      throw located(SqlState.BadCopyFileFormat, this.line, `the quoted field of the record at line ${this.line} is not closed before the end of the file`);
    }
    const empty = Buffer.alloc(0);
    if (this.state === UNQUOTED || this.state === QUOTE_SEEN) {
      if (this.state === QUOTE_SEEN) this.dropCarriedQuote();
      this.field(empty, 0, 0, this.state === QUOTE_SEEN);
      this.record(this.offset);
    } else if (this.state === START && this.fieldIndex > 0) {
      this.field(empty, 0, 0, false);
      this.record(this.offset);
    } else if (this.state === AFTER_CR) this.lineEnd(EOL_CR);
    this.state = START;
  }

  /** Skip and replace ranges found since the last call, as (start, end, SKIP_* or REPLACE) triples of stream offsets. */
  takeSkips(): number[] {
    const skips = this.skips;
    this.skips = [];
    return skips;
  }

  /** The bytes of the REPLACE ranges of takeSkips(), in the same order. */
  takeReplacements(): Buffer[] {
    const replacements = this.replacements;
    this.replacements = [];
    return replacements;
  }

  /**
   * From now on, finds the values to rewrite: those of each column with a rewriter (the first
   * record's too when `first`, i.e. it is data) that it rewrites.
   */
  rewrite(rewriters: readonly (Rewriter | undefined)[], first: boolean): void {
    this.rewriters = rewriters;
    this.rewriteFirst = first;
  }

  /**
   * The stream offset up to which every range is known: the start of the record being read, if
   * any (its ranges are known once it has ended: whether it is a blank line, the values to
   * rewrite), else the end of what was fed.
   */
  get decidedTo(): number {
    return (this.state === START && this.fieldIndex === 0) || this.state === AFTER_CR ? this.offset : this.recordStart;
  }

  /** The type of every column, counting the first record as data unless it is the header. */
  types(header: boolean): ChosenType[] {
    return this.columns?.types(header) ?? [];
  }

  /** Whether every value of column `col` so far has one of `bits` (classify-bits.ts). */
  fits(col: number, bits: number, header: boolean): boolean {
    return this.columns?.fits(col, bits, header) ?? true;
  }

  /** Whether the first record names the columns, by `mode` (auto: the rule of infer.ts). */
  isHeader(mode: HeaderMode): boolean {
    return mode === 'first_row' || (mode === 'auto' && this.columns !== undefined && this.columns.isHeader());
  }

  private dropCarriedQuote(): void {
    const last = this.carry.pop()!;
    this.carry.push(last.subarray(0, last.length - 1));
    this.carryLength--;
  }

  private lineEnd(style: number): void {
    if (this.eol === 0) this.eol = style;
    else if (this.eol !== style) this.incompatible = 'mixed line ends';
  }

  /** After a field ended at b[i] = c (a delimiter or a line end): the index to go on from. */
  private afterField(b: Buffer, i: number, c: number): number {
    if (c === this.delimiter) {
      this.state = START;
      return i + 1;
    }
    this.record(this.offset + i + 1);
    if (c === LF) {
      this.lineEnd(EOL_LF);
      this.recordStart = this.offset + i + 1;
      this.state = START;
    } else this.state = AFTER_CR;
    return i + 1;
  }

  /** Postgres (17 and before) ends COPY data at a line holding `\.`: such a file is read by csv.ts. */
  private checkEndMarker(buf: Buffer): void {
    const lineStart = (prev: number) => prev === -1 || prev === LF || prev === CR;
    if (this.last === BACKSLASH && buf[0] === DOT && lineStart(this.beforeLast)) this.incompatible = 'a \\. line';
    for (let k = buf.indexOf(BACKSLASH); k >= 0; k = buf.indexOf(BACKSLASH, k + 1)) {
      if (buf[k + 1] === DOT && lineStart(k > 0 ? buf[k - 1]! : this.last)) this.incompatible = 'a \\. line';
    }
    const n = buf.length;
    if (n > 0) {
      this.beforeLast = n >= 2 ? buf[n - 2]! : this.last;
      this.last = buf[n - 1]!;
    }
  }

  /** One field's bytes b[s..e) (after what was carried), quoted or not. */
  private field(b: Buffer, s: number, e: number, quoted: boolean): void {
    let start = this.offset + s;
    if (this.carryLength > 0) {
      this.carry.push(b.subarray(s, e));
      b = Buffer.concat(this.carry);
      s = 0;
      e = b.length;
      this.carry = [];
      this.carryLength = 0;
      start = this.fieldStart;
    }
    const col = this.fieldIndex++;
    const nulls = this.nullValue;
    const isNull = !quoted && e - s === nulls.length && (nulls.length === 0 || b.compare(nulls, 0, nulls.length, s, e) === 0);
    if (col === 0 && !quoted && (isNull || e === s)) {
      this.pendingBlank = true; // decided by what follows: a line end (blank line) or a delimiter
      this.pendingNull = isNull;
      return;
    }
    if (col === 1 && this.pendingBlank) this.pendingValue();
    if (this.width < 0) this.first.push(isNull ? null : fieldText(b, s, e, quoted && this.escaped));
    else if (col < this.width && !isNull) this.columns?.value(col, b, s, e, quoted && this.escaped);
    const rewriter = this.rewriters[col];
    if (rewriter !== undefined && !isNull && e > s && (this.width >= 0 || this.rewriteFirst)) this.replace(rewriter, b, s, e, start, quoted);
  }

  /** Notes the rewriting of a value b[s..e) that starts at stream offset `start`, if it needs one. */
  private replace(rewriter: Rewriter, b: Buffer, s: number, e: number, start: number, quoted: boolean): void {
    let bytes = rewriter(b, s, e);
    if (bytes === undefined) return;
    // Unquoted, the new text must not read as NULL where the old one did not.
    if (!quoted && bytes.equals(this.nullValue)) bytes = Buffer.concat([Buffer.from('"'), bytes, Buffer.from('"')]);
    this.skips.push(start, start + e - s, REPLACE);
    this.replacements.push(bytes);
  }

  /** The first field turned out not to end a blank line: it is an empty text or a NULL. */
  private pendingValue(): void {
    this.pendingBlank = false;
    if (this.width < 0) this.first.push(this.pendingNull ? null : '');
    else if (!this.pendingNull) this.columns?.empty(0);
  }

  /** A record ended at stream offset `end` (after its line end). */
  private record(end: number): void {
    const fields = this.fieldIndex;
    const start = this.line;
    this.fieldIndex = 0;
    this.previousSkip = -1;
    if (fields === 1 && this.pendingBlank) {
      this.pendingBlank = false;
      this.lastEnd = start;
      this.skips.push(this.recordStart, end, SKIP_BLANK);
      this.previousSkip = SKIP_BLANK;
      return;
    }
    if (this.pendingBlank) this.pendingValue();
    this.lastEnd = start + this.newlines;
    this.newlines = 0;
    if (this.width < 0) {
      this.firstRecord(fields);
      this.skips.push(this.recordStart, end, SKIP_FIRST);
      this.previousSkip = SKIP_FIRST;
    } else if (fields !== this.width) throw raggedRow(start, fields, this.width);
    else this.rows++;
  }

  private firstRecord(width: number): void {
    if (width > MAX_COLUMNS) throw tooManyColumns(width);
    this.width = width;
    if (this.infer) this.columns = new ColumnInference(this.first);
  }
}
