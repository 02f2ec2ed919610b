/**
 * How a value written as people write it (types.ts's Written) reaches Postgres' input function
 * unchanged in meaning, whatever the session's settings: thousands separators are dropped
 * (`1,234.5` → `1234.5`), and dates whose day and month are both numbers are put in ISO order
 * (`31/01/2000 13:30` → `2000-01-31 13:30`), since Postgres would read those by its DateStyle.
 * Every other layout of written.ts (month names, `YYYY/MM/DD`, AM/PM, offsets) Postgres reads the
 * same under any DateStyle and TimeZone, so it goes as written. The direct load rewrites the
 * bytes on their way to COPY (rewriterOf); the row-by-row load and the conversion of columns
 * loaded as text do the same in SQL (castSql).
 */
import { escapeLiteral } from 'pg';
import type { Written } from './types.js';
import { GROUPED, numericOrder, rewriteDate } from './written.js';

/**
 * Settings under which every load runs (`SET LOCAL`, in its transaction): what Postgres still
 * parses itself — a date written another way, read as a DATE because the caller chose that type —
 * then reads the same whatever the session's own settings: month first, and UTC for a timestamp
 * without offset loaded as TIMESTAMP WITH TIME ZONE.
 */
export const LOAD_SETTINGS = `SET LOCAL DateStyle = 'ISO, MDY'; SET LOCAL TimeZone = 'UTC'`;

/** Rewrites the value b[s..e) for Postgres; undefined when it needs no rewriting (or does not fit). */
export type Rewriter = (b: Uint8Array, s: number, e: number) => Buffer | undefined;

const NUMERIC_TYPE = /^(?:bigint|integer|smallint|real|double precision|numeric(?:\(.*\))?)$/;
const DATE_TYPE = /^(?:date|timestamp\b.*)$/;

/**
 * `1,234.5` → `1234.5`; undefined for a value that is not a number grouped by thousands
 * (`-?[1-9]\d{0,2}(,\d{3})+(\.\d*)?`): a bare one needs nothing, anything else is not changed.
 */
const ungroup: Rewriter = (b, s, e) => {
  let i = b[s] === 45 ? s + 1 : s;
  const lead = i;
  while (i < e && b[i]! >= 48 && b[i]! <= 57) i++;
  if (i === lead || i - lead > 3 || b[lead] === 48 || i >= e || b[i] !== 44) return undefined;
  let commas = 0;
  while (i < e && b[i] === 44) {
    for (let k = 1; k <= 3; k++) if (!(i + k < e && b[i + k]! >= 48 && b[i + k]! <= 57)) return undefined;
    i += 4;
    commas++;
  }
  if (i < e && b[i] !== 46) return undefined;
  for (let k = i + 1; k < e; k++) if (b[k]! < 48 || b[k]! > 57) return undefined;
  const out = Buffer.allocUnsafe(e - s - commas);
  let k = 0;
  for (let j = s; j < e; j++) if (b[j] !== 44) out[k++] = b[j]!;
  return out;
};

const monthFirst: Rewriter = (b, s, e) => rewriteDate(b, s, e, 'month-first');
const dayFirst: Rewriter = (b, s, e) => rewriteDate(b, s, e, 'day-first');

/** What a column whose values are `written` so must have rewritten to load as `type` (as format_type spells it). */
function applies(type: string, written: Written | undefined): 'grouped' | 'month-first' | 'day-first' | undefined {
  if (written === undefined) return undefined;
  if (written.layout === GROUPED) return NUMERIC_TYPE.test(type) ? 'grouped' : undefined;
  return DATE_TYPE.test(type) ? numericOrder(written.layout) : undefined;
}

/** How values `written` so read as `type`: as written, when the type is of their family (a number, a date); else undefined. */
export function writtenAs(type: string, written: Written | undefined): Written | undefined {
  if (written === undefined) return undefined;
  return (written.layout === GROUPED ? NUMERIC_TYPE : DATE_TYPE).test(type) ? written : undefined;
}

/** The rewriting of a column's values on their way to COPY, if any. */
export function rewriterOf(type: string, written: Written | undefined): Rewriter | undefined {
  const rewrite = applies(type, written);
  if (rewrite === 'grouped') return ungroup;
  if (rewrite === 'month-first') return monthFirst;
  return rewrite === 'day-first' ? dayFirst : undefined;
}

/** A value as Postgres is given it when its column (written so) loads as `type`. */
export function readable(value: string, type: string, written: Written | undefined): string {
  const rewriter = rewriterOf(type, written);
  if (rewriter === undefined) return value;
  const b = Buffer.from(value, 'utf8');
  return rewriter(b, 0, b.length)?.toString('utf8') ?? value;
}

const DMY = escapeLiteral('^(\\d{1,2})[/.-](\\d{1,2})[/.-](\\d{4})');

/** SQL of the text Postgres is given for the text `expr` (a column, as SQL) when its column, `written` so, loads as `type`. */
export function readableSql(expr: string, type: string, written: Written | undefined): string {
  const rewrite = applies(type, written);
  if (rewrite === 'grouped') return `replace(${expr}, ',', '')`;
  if (rewrite === undefined) return expr;
  return `regexp_replace(${expr}, ${DMY}, ${escapeLiteral(rewrite === 'month-first' ? '\\3-\\1-\\2' : '\\3-\\2-\\1')})`;
}

/** SQL reading the text `expr` as `type`, the column's values being `written` so. */
export function castSql(expr: string, type: string, written: Written | undefined): string {
  return type === 'text' ? expr : `${readableSql(expr, type, written)}::${type}`;
}
