/**
 * The check of layouts chosen by the caller (`columns[i].written`, overrides.ts): every value of
 * such a column must be written so, since the loader reads it by that layout. Inferred layouts
 * need no check — every value fits them by definition. The row-by-row load finds the first value
 * that does not fit (by line) and fails the upload naming it; the direct load hands such an
 * upload to the row-by-row load as soon as its scan sees one (CsvScan.fits).
 */
import { classify } from './classify.js';
import { located } from './located.js';
import type { ColumnOverride } from './types.js';
import { GROUPED, LAYOUT_BITS, type Layout } from './written.js';

/** The bit each column's chosen layout requires (classify-bits.ts), if any. */
export function requiredBits(overrides: readonly ColumnOverride[] | undefined): (number | undefined)[] {
  return overrides?.map((o) => (o.written === undefined ? undefined : LAYOUT_BITS[o.written])) ?? [];
}

/** The first value, by line, that does not fit its column's chosen layout. */
export class LayoutCheck {
  private readonly bits: (number | undefined)[];
  private readonly layouts: (Layout | undefined)[];
  private first: { line: number; column: number; value: string } | undefined;

  constructor(overrides: readonly ColumnOverride[] | undefined) {
    this.bits = requiredBits(overrides);
    this.layouts = overrides?.map((o) => o.written) ?? [];
  }

  /** Checks the values of the record at `line`. */
  row(line: number, values: readonly (string | null)[]): void {
    if (this.first !== undefined && this.first.line <= line) return;
    for (let i = 0; i < this.bits.length; i++) {
      const bit = this.bits[i];
      const v = values[i];
      if (bit === undefined || v === null || v === undefined || (classify(v) & bit) !== 0) continue;
      this.first = { line, column: i, value: v };
      return;
    }
  }

  /** Throws the error of the first value that does not fit, naming its column as `names` do. */
  assert(names: readonly string[]): void {
    const bad = this.first;
    if (bad === undefined) return;
    const layout = this.layouts[bad.column]!;
    const value = JSON.stringify(bad.value.slice(0, 200));
    throw located(layout === GROUPED ? '22P02' : '22007', bad.line, `line ${bad.line}, column "${names[bad.column]}": ${value} is not written ${layout}`, {
      hint: 'fix the value in the file, or choose another layout or type for the column (the columns field)',
    });
  }
}
