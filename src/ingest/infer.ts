/**
 * Column type inference over every value of an upload, in constant memory: one mask per column
 * (classify.ts), narrowed by each non-NULL value. At the end each column takes the most specific
 * type all its values fit, in this order: BOOLEAN, BIGINT, NUMERIC (integers beyond int8),
 * DOUBLE PRECISION, NUMERIC (huge integers mixed with decimals) — numbers all bare, or all with
 * their thousands grouped —, DATE, TIMESTAMP, TIMESTAMP WITH TIME ZONE — all in one layout —,
 * JSONB, else TEXT. A column without any value is TEXT.
 */
import { ALL, Bit, LAYOUTS, NUMBER_FORMS } from './classify-bits.js';
import { classify } from './classify.js';
import type { ColumnType, Written } from './types.js';
import { DATE_LAYOUTS, GROUPED, type DateLayout } from './written.js';

/** The type chosen for a mask, with how its values are written (or, for TEXT, why dates were not dates). */
export interface ChosenType {
  type: ColumnType;
  written?: Written | undefined;
  ambiguous?: DateLayout[] | undefined;
}

const NUMBERS: readonly [number, ColumnType][] = [
  [Bit.Bigint, 'bigint'],
  [Bit.NumericInt, 'numeric'],
  [Bit.Double, 'double precision'],
  [Bit.NumericAny, 'numeric'],
];
const DATE_KINDS: readonly [number, ColumnType][] = [
  [Bit.Date, 'date'],
  [Bit.Timestamp, 'timestamp without time zone'],
  [Bit.TimestampTz, 'timestamp with time zone'],
];
const DATE_LAYOUT_BITS = Object.entries(DATE_LAYOUTS) as [DateLayout, number][];

/** The date kind of a mask, in the one layout left (ambiguous when two are). */
function dateType(mask: number, type: ColumnType): ChosenType {
  const clocks = mask & (Bit.Clock24 | Bit.Clock12);
  if ((mask & LAYOUTS) === 0 || clocks === 0) return { type: 'text' };
  if (mask & Bit.Iso) return { type };
  const layouts = DATE_LAYOUT_BITS.filter(([, bit]) => mask & bit).map(([layout]) => layout);
  // Two layouts left: every value reads both month first and day first (03/04/2024).
  if (layouts.length > 1) return { type: 'text', ambiguous: layouts };
  const clock12 = type !== 'date' && clocks === Bit.Clock12;
  return { type, written: clock12 ? { layout: layouts[0]!, clock12 } : { layout: layouts[0]! } };
}

/** The type of a column whose values all fit `mask` (`seen` = it had a non-NULL value). */
export function chooseType(mask: number, seen: boolean): ChosenType {
  if (!seen) return { type: 'text' };
  if (mask & Bit.Boolean) return { type: 'boolean' };
  if (mask & NUMBER_FORMS) {
    for (const [bit, type] of NUMBERS) if (mask & bit) return mask & Bit.Bare ? { type } : { type, written: { layout: GROUPED } };
  }
  for (const [bit, type] of DATE_KINDS) if (mask & bit) return dateType(mask, type);
  if (mask & Bit.Json) return { type: 'jsonb' };
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
