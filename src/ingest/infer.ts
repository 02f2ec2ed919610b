/**
 * Column type inference over every value of an upload, in constant memory: one mask per column
 * (classify.ts), narrowed by each non-NULL value. At the end each column takes the most specific
 * type all its values fit, in this order: BOOLEAN, BIGINT, NUMERIC (integers beyond int8),
 * DOUBLE PRECISION, NUMERIC (huge integers mixed with decimals), DATE (ISO, else one unambiguous
 * layout), TIMESTAMP, TIMESTAMP WITH TIME ZONE, JSONB, else TEXT. A column without any value is TEXT.
 */
import { ALL, Bit, DATE_LAYOUTS, classify } from './classify.js';
import type { ColumnType } from './types.js';

/** The type chosen for a mask, with the `to_date` layout of a non-ISO date column. */
export interface ChosenType {
  type: ColumnType;
  dateLayout?: string | undefined;
}

const ORDER: readonly [number, ColumnType][] = [
  [Bit.Boolean, 'boolean'],
  [Bit.Bigint, 'bigint'],
  [Bit.NumericInt, 'numeric'],
  [Bit.Double, 'double precision'],
  [Bit.NumericAny, 'numeric'],
  [Bit.Date, 'date'],
];
const LATER: readonly [number, ColumnType][] = [
  [Bit.Timestamp, 'timestamp without time zone'],
  [Bit.TimestampTz, 'timestamp with time zone'],
  [Bit.Json, 'jsonb'],
];

/** The type of a column whose values all fit `mask` (`seen` = it had a non-NULL value). */
export function chooseType(mask: number, seen: boolean): ChosenType {
  if (!seen) return { type: 'text' };
  for (const [bit, type] of ORDER) if (mask & bit) return { type };
  const layouts = DATE_LAYOUTS.filter((l) => mask & l.bit);
  // Two layouts left (every value reads as both 03/04/2024 ways): ambiguous, so not a date.
  if (layouts.length === 1) return { type: 'date', dateLayout: layouts[0]!.pattern };
  for (const [bit, type] of LATER) if (mask & bit) return { type };
  return { type: 'text' };
}

/** Inference state of all columns of one upload; columns may be added while reading (JSON keys). */
export class Inference {
  private readonly masks: number[] = [];
  private readonly seen: boolean[] = [];

  get width(): number {
    return this.masks.length;
  }

  /** Makes room for `width` columns; new columns have seen nothing yet. */
  widen(width: number): void {
    while (this.masks.length < width) {
      this.masks.push(ALL);
      this.seen.push(false);
    }
  }

  /** Narrows each column by its value in `values` (NULLs say nothing). */
  add(values: readonly (string | null)[]): void {
    const masks = this.masks;
    if (values.length > masks.length) this.widen(values.length);
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v === null || v === undefined) continue;
      this.seen[i] = true;
      const m = masks[i]!;
      // Once a column is TEXT nothing can change it: skip the work.
      if (m !== 0) masks[i] = m & classify(v);
    }
  }

  /** Folds another inference (the header candidate row) into this one. */
  merge(other: Inference): void {
    this.widen(other.width);
    for (let i = 0; i < other.width; i++) {
      this.masks[i]! &= other.masks[i]!;
      this.seen[i] = this.seen[i]! || other.seen[i]!;
    }
  }

  /** The chosen type of every column. */
  types(): ChosenType[] {
    return this.masks.map((m, i) => chooseType(m, this.seen[i]!));
  }
}

/**
 * Header auto-detection. The first row names the columns when
 * 1. every cell of it is non-empty text that is not a number, boolean, date, timestamp or JSON,
 * 2. its cells are all different, and
 * 3. some column's other values have a type other than TEXT (the first cell doesn't fit it), or,
 *    when every column is TEXT, no first-row cell appears again further down its column.
 */
export function isHeaderRow(first: readonly (string | null)[], rest: readonly ChosenType[], repeated: readonly boolean[]): boolean {
  if (first.length === 0) return false;
  for (const cell of first) {
    if (cell === null || cell.trim() === '' || classify(cell) !== 0) return false;
  }
  if (new Set(first.map((c) => c!.trim())).size !== first.length) return false;
  if (rest.some((t) => t.type !== 'text')) return true;
  return !repeated.some(Boolean);
}
