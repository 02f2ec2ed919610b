/**
 * The inference state of the direct load's scanner (csv-scan.ts): infer.ts's masks, kept in typed
 * arrays and fed the fields' bytes, so that a value costs no string unless classify-bytes.ts
 * needs classify.ts (or the field had doubled quotes). Like read.ts, it keeps the first record
 * apart until the header is decided, and remembers which of its cells come again further down
 * their column (the header rule of an all-text file).
 */
import { ALL, classify } from './classify.js';
import { classifyBytes, SLOW } from './classify-bytes.js';
import { chooseType, isHeaderRow, type ChosenType } from './infer.js';

/** The text of field bytes b[s..e); `escaped`: a quoted field whose quotes are doubled in the bytes. */
export function fieldText(b: Buffer, s: number, e: number, escaped: boolean): string {
  const text = b.toString('utf8', s, e);
  return escaped ? text.replaceAll('""', '"') : text;
}

/** infer.ts's Inference for the scanner: masks per column, fed field bytes. */
export class ColumnInference {
  private readonly masks: Int32Array;
  private readonly seen: Uint8Array;
  private readonly firstMasks: Int32Array;
  private readonly firstSeen: Uint8Array;
  private readonly repeated: Uint8Array;
  /** The first record's cells as bytes, while it may be a header; undefined when it cannot be. */
  private readonly firstCells: Buffer[] | undefined;

  /** State for the columns of `first`, the first record (NULL as null). */
  constructor(private readonly first: readonly (string | null)[]) {
    const width = first.length;
    this.masks = new Int32Array(width).fill(ALL);
    this.seen = new Uint8Array(width);
    this.repeated = new Uint8Array(width);
    this.firstMasks = new Int32Array(width).fill(ALL);
    this.firstSeen = new Uint8Array(width);
    first.forEach((v, i) => {
      if (v === null) return;
      this.firstSeen[i] = 1;
      this.firstMasks[i] = classify(v);
    });
    if (isHeaderRow(first, [], [])) this.firstCells = first.map((v) => Buffer.from(v!, 'utf8'));
  }

  /** Column `col` of a later record holds the (non-NULL) value of bytes b[s..e). */
  value(col: number, b: Buffer, s: number, e: number, escaped: boolean): void {
    this.seen[col] = 1;
    if (this.firstCells !== undefined && this.repeated[col] === 0) {
      const cell = this.firstCells[col]!;
      const same = escaped ? fieldText(b, s, e, true) === this.first[col] : cell.length === e - s && b.compare(cell, 0, cell.length, s, e) === 0;
      if (same) this.repeated[col] = 1;
    }
    const mask = this.masks[col]!;
    if (mask === 0) return; // TEXT already: nothing can change it
    let bits = escaped ? SLOW : classifyBytes(b, s, e);
    if (bits === SLOW) bits = classify(fieldText(b, s, e, escaped));
    this.masks[col] = mask & bits;
  }

  /** Column `col` of a later record holds the empty text (not NULL). */
  empty(col: number): void {
    this.seen[col] = 1;
    this.masks[col] = 0;
    if (this.firstCells !== undefined && this.first[col] === '') this.repeated[col] = 1;
  }

  /** The type of every column, counting the first record as data unless it is the header. */
  types(header: boolean): ChosenType[] {
    return this.first.map((_, i) => {
      const mask = header ? this.masks[i]! : this.masks[i]! & this.firstMasks[i]!;
      return chooseType(mask, this.seen[i] === 1 || (!header && this.firstSeen[i] === 1));
    });
  }

  /** Whether every value of column `col` so far has one of `bits` (the first record counted unless it is the header). */
  fits(col: number, bits: number, header: boolean): boolean {
    const mask = header ? this.masks[col]! : this.masks[col]! & this.firstMasks[col]!;
    return (mask & bits) !== 0;
  }

  /** Whether the first record names the columns by infer.ts's rule (`header=auto`). */
  isHeader(): boolean {
    return isHeaderRow(this.first, this.types(true), Array.from(this.repeated, (r) => r === 1));
  }
}
