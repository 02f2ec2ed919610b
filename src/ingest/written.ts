/**
 * Values as people write them: numbers with their thousands grouped (`1,234,567.5`, GROUPED),
 * and dates and timestamps besides ISO 8601: `2015/01/31`, `01/31/2015` or
 * `31/01/2015`, `31.01.2015`, `Jan 31 2015`, `January 31, 2015`, `31 Jan 2015`, `31-Jan-2015`,
 * each maybe followed by a time (`13:30`, `1:30:05.25 PM`) and a zone offset (`+01:00`, `Z`).
 * The grammar is read over UTF-8 bytes, for the byte scanner and (through a Buffer) for
 * classify.ts alike, so that there is one definition of what each layout accepts.
 *
 * A value fits a layout only when it names a real calendar day and clock time; the layout then
 * decides the day. Postgres' own date input reads every layout here the same way whatever the
 * session's DateStyle, except the all-digit day/month orders: those are rewritten into ISO order
 * (year-month-day) before Postgres sees them (rewriteDate; the SQL of convert.ts does the same).
 */
import { isDigit, isLetter } from '../shared/chars.js';
import { Bit, validDate } from './classify-bits.js';

/** Date layouts other than ISO, each with its bit (classify-bits.ts). */
export const DATE_LAYOUTS = {
  'YYYY/MM/DD': Bit.YmdSlash,
  'MM/DD/YYYY': Bit.MdySlash,
  'DD/MM/YYYY': Bit.DmySlash,
  'DD.MM.YYYY': Bit.DmyDot,
  'MM-DD-YYYY': Bit.MdyDash,
  'DD-MM-YYYY': Bit.DmyDash,
  'Mon D YYYY': Bit.MonDY,
  'Month D, YYYY': Bit.MonDCommaY,
  'D Mon YYYY': Bit.DMonY,
  'DD-Mon-YYYY': Bit.DMonYDash,
} as const;
export type DateLayout = keyof typeof DATE_LAYOUTS;

/** The layout of numbers with their thousands grouped by commas (any number of decimals after a point). */
export const GROUPED = '1,234,567';

/** How a column's values may be written, besides ISO dates and bare numbers: a date layout, or GROUPED. */
export type Layout = DateLayout | typeof GROUPED;

/** Every layout, with the bit a value written so has. */
export const LAYOUT_BITS: Readonly<Record<Layout, number>> = { ...DATE_LAYOUTS, [GROUPED]: Bit.Grouped };

/** Layouts whose day and month are both numbers: Postgres would read them by DateStyle, so they are rewritten. */
const NUMERIC_ORDER: Partial<Record<DateLayout, 'month-first' | 'day-first'>> = {
  'MM/DD/YYYY': 'month-first',
  'MM-DD-YYYY': 'month-first',
  'DD/MM/YYYY': 'day-first',
  'DD-MM-YYYY': 'day-first',
  'DD.MM.YYYY': 'day-first',
};

/** The order of day and month of a layout that must be rewritten into ISO order; undefined otherwise. */
export function numericOrder(layout: DateLayout): 'month-first' | 'day-first' | undefined {
  return NUMERIC_ORDER[layout];
}

const SLASH = 47;
const DOT = 46;
const DASH = 45;
const SPACE = 32;
const COLON = 58;
const COMMA = 44;
const PLUS = 43;
const Z = 90;

/** The byte at `i` of a value ending at `e`; -1 past its end (the bytes after it belong to others). */
const at = (b: Uint8Array, i: number, e: number): number => (i < e ? b[i]! : -1);

/** Digits b[s..e) as a number. */
function num(b: Uint8Array, s: number, e: number): number {
  let n = 0;
  for (let i = s; i < e; i++) n = n * 10 + b[i]! - 48;
  return n;
}

/** The end of the run of at most `max` digits from `i` (i itself when there is none). */
function digits(b: Uint8Array, i: number, e: number, max: number): number {
  let j = i;
  while (j < e && j - i < max && isDigit(b[j]!)) j++;
  return j;
}

/** Exactly `n` digits from `i`, and no digit after them: their end, or -1. */
function exactly(b: Uint8Array, i: number, e: number, n: number): number {
  const j = digits(b, i, e, n);
  return j - i === n && !isDigit(at(b, j, e)) ? j : -1;
}

/** Lower-cased ASCII letters of b[s..e) (at most 9) packed in one number; -1 otherwise. */
function packWord(b: Uint8Array, s: number, e: number): number {
  if (e - s > 9 || e === s) return -1;
  let w = 0;
  for (let i = s; i < e; i++) {
    let c = b[i]!;
    if (c >= 65 && c <= 90) c += 32;
    else if (c < 97 || c > 122) return -1;
    w = w * 32 + (c - 96);
  }
  return w;
}

/** English month names, abbreviated (and "Sept") or in full, any case → month number. */
const MONTHS = new Map<number, number>();
['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'].forEach((name, k) => {
  for (const spelling of [name, name.slice(0, 3), ...(name === 'september' ? ['sept'] : [])]) MONTHS.set(packWord(Buffer.from(spelling), 0, spelling.length), k + 1);
});

/** The month named by the letters from `i`: [month, end], or undefined. */
function monthName(b: Uint8Array, i: number, e: number): [number, number] | undefined {
  let j = i;
  while (j < e && isLetter(b[j]!)) j++;
  const month = MONTHS.get(packWord(b, i, j));
  return month === undefined ? undefined : [month, j];
}

/** A date read from the start of a value: its layout bits, and where the date ends. */
interface DatePart {
  bits: number;
  end: number;
}

/** `YYYY/M/D`, `M/D/YYYY`-like, `D Mon YYYY`, `D-Mon-YYYY`: values that start with a digit. */
function digitFirstDate(b: Uint8Array, s: number, e: number): DatePart | undefined {
  const a = digits(b, s, e, 4);
  const sep = at(b, a, e);
  if (a - s === 4) {
    if (sep !== SLASH) return undefined;
    const m = digits(b, a + 1, e, 2);
    if (m === a + 1 || at(b, m, e) !== SLASH) return undefined;
    const d = digits(b, m + 1, e, 2);
    if (d === m + 1 || isDigit(at(b, d, e))) return undefined;
    return validDate(num(b, s, a), num(b, a + 1, m), num(b, m + 1, d)) ? { bits: Bit.YmdSlash, end: d } : undefined;
  }
  if (a - s > 2 || a === s) return undefined;
  const first = num(b, s, a);
  if (sep === SLASH || sep === DOT || (sep === DASH && isDigit(at(b, a + 1, e)))) {
    const m = digits(b, a + 1, e, 2);
    if (m === a + 1 || at(b, m, e) !== sep) return undefined;
    const y = exactly(b, m + 1, e, 4);
    if (y < 0) return undefined;
    const second = num(b, a + 1, m);
    const year = num(b, m + 1, y);
    const mdy = validDate(year, first, second);
    const dmy = validDate(year, second, first);
    let bits: number;
    if (sep === SLASH) bits = (mdy ? Bit.MdySlash : 0) | (dmy ? Bit.DmySlash : 0);
    else if (sep === DASH) bits = (mdy ? Bit.MdyDash : 0) | (dmy ? Bit.DmyDash : 0);
    else bits = dmy ? Bit.DmyDot : 0;
    return bits ? { bits, end: y } : undefined;
  }
  if (sep !== SPACE && sep !== DASH) return undefined;
  const named = monthName(b, a + 1, e);
  if (!named || at(b, named[1], e) !== sep) return undefined;
  const y = exactly(b, named[1] + 1, e, 4);
  if (y < 0 || !validDate(num(b, named[1] + 1, y), named[0], first)) return undefined;
  return { bits: sep === SPACE ? Bit.DMonY : Bit.DMonYDash, end: y };
}

/** `Jan 31 2000`, `January 31, 2000`: values that start with a month name. */
function monthFirstDate(b: Uint8Array, s: number, e: number): DatePart | undefined {
  const named = monthName(b, s, e);
  if (!named || at(b, named[1], e) !== SPACE) return undefined;
  const d = digits(b, named[1] + 1, e, 2);
  if (d === named[1] + 1) return undefined;
  const comma = at(b, d, e) === COMMA;
  const ys = comma ? d + 2 : d + 1;
  if (at(b, ys - 1, e) !== SPACE) return undefined;
  const y = exactly(b, ys, e, 4);
  if (y < 0 || !validDate(num(b, ys, y), named[0], num(b, named[1] + 1, d))) return undefined;
  return { bits: comma ? Bit.MonDCommaY : Bit.MonDY, end: y };
}

/** Whether b[k..] starts with AM or PM (any case) not followed by a letter. */
function amPm(b: Uint8Array, k: number, e: number): boolean {
  const a = at(b, k, e) | 32;
  return (a === 97 || a === 112) && (at(b, k + 1, e) | 32) === 109 && !isLetter(at(b, k + 2, e));
}

/**
 * The time after a date, from `i` (the space after the date) to `e`:
 * `H:MM[:SS[.fraction]]` with an optional AM/PM (then 1–12 o'clock, else 0–23), then an optional
 * offset (`Z`, `±HH`, `±HHMM`, `±HH:MM`); a space before AM/PM or the offset is allowed (after
 * AM/PM required). Returns the kind and clock bits, or 0.
 */
function timeBits(b: Uint8Array, i: number, e: number): number {
  if (at(b, i, e) !== SPACE) return 0;
  const h = digits(b, i + 1, e, 2);
  if (h === i + 1 || at(b, h, e) !== COLON) return 0;
  let j = exactly(b, h + 1, e, 2);
  if (j < 0) return 0;
  const hour = num(b, i + 1, h);
  const minute = num(b, h + 1, j);
  let second = 0;
  if (at(b, j, e) === COLON) {
    const k = exactly(b, j + 1, e, 2);
    if (k < 0) return 0;
    second = num(b, j + 1, k);
    j = k;
    if (at(b, j, e) === DOT) {
      const f = digits(b, j + 1, e, 10);
      if (f === j + 1 || f - j - 1 > 9) return 0;
      j = f;
    }
  }
  if (minute > 59 || second > 59) return 0;
  let clock: number = Bit.Clock24;
  let k = at(b, j, e) === SPACE ? j + 1 : j;
  if (amPm(b, k, e)) {
    clock = Bit.Clock12;
    j = k + 2;
  }
  if (clock === Bit.Clock12 ? hour < 1 || hour > 12 : hour > 23) return 0;
  if (j === e) return Bit.Timestamp | clock;
  // Postgres reads `am-08` or `pmZ` as one word (a zone name it does not know): after AM/PM, a space.
  if (clock === Bit.Clock12 && at(b, j, e) !== SPACE) return 0;
  k = at(b, j, e) === SPACE ? j + 1 : j;
  const z = at(b, k, e);
  if (z === Z) return k + 1 === e ? Bit.TimestampTz | clock : 0;
  if (z !== PLUS && z !== DASH) return 0;
  // ±HH, ±HHMM or ±HH:MM, and nothing after it.
  if (!isDigit(at(b, k + 1, e)) || !isDigit(at(b, k + 2, e))) return 0;
  const zh = num(b, k + 1, k + 3);
  let zm = 0;
  let m = k + 3;
  if (m < e) {
    if (b[m] === COLON) m++;
    if (e - m !== 2 || !isDigit(b[m]!) || !isDigit(b[m + 1]!)) return 0;
    zm = num(b, m, e);
  }
  return zh > 15 || zm > 59 ? 0 : Bit.TimestampTz | clock;
}

/**
 * The bits of b[s..e) as a date or timestamp in one of DATE_LAYOUTS (layout, kind and clock
 * bits, classify-bits.ts); 0 when it is none of them.
 */
export function writtenDateBits(b: Uint8Array, s: number, e: number): number {
  if (e - s < 8) return 0;
  const c = b[s]!;
  const date = isDigit(c) ? digitFirstDate(b, s, e) : isLetter(c) ? monthFirstDate(b, s, e) : undefined;
  if (!date) return 0;
  if (date.end === e) return date.bits | Bit.Date | Bit.Timestamp | Bit.Clock24 | Bit.Clock12;
  const time = timeBits(b, date.end, e);
  return time ? date.bits | time : 0;
}

/**
 * A value of an all-digit layout (`D/M/YYYY`, `M-D-YYYY`, `D.M.YYYY`…, the time after it
 * untouched) rewritten with its date in ISO order, `YYYY-MM-DD`, which Postgres reads the same
 * whatever its DateStyle; undefined when b[s..e) does not start with such a date.
 */
export function rewriteDate(b: Uint8Array, s: number, e: number, order: 'month-first' | 'day-first'): Buffer | undefined {
  const a = digits(b, s, e, 2);
  const sep = at(b, a, e);
  if (a === s || (sep !== SLASH && sep !== DOT && sep !== DASH)) return undefined;
  const m = digits(b, a + 1, e, 2);
  if (m === a + 1 || at(b, m, e) !== sep) return undefined;
  const y = exactly(b, m + 1, e, 4);
  if (y < 0) return undefined;
  const [ms, me, ds, de] = order === 'month-first' ? [s, a, a + 1, m] : [a + 1, m, s, a];
  const out = Buffer.allocUnsafe(10 + e - y);
  out.set(b.subarray(m + 1, y), 0);
  out[4] = DASH;
  out[5] = me - ms === 2 ? b[ms]! : 48;
  out[6] = b[me - 1]!;
  out[7] = DASH;
  out[8] = de - ds === 2 ? b[ds]! : 48;
  out[9] = b[de - 1]!;
  out.set(b.subarray(y, e), 10);
  return out;
}

/** The date 2000-01-31 at 13:30 as each layout writes it: the example a preview shows. */
const EXAMPLES: Record<DateLayout, string> = {
  'YYYY/MM/DD': '2000/01/31',
  'MM/DD/YYYY': '01/31/2000',
  'DD/MM/YYYY': '31/01/2000',
  'DD.MM.YYYY': '31.01.2000',
  'MM-DD-YYYY': '01-31-2000',
  'DD-MM-YYYY': '31-01-2000',
  'Mon D YYYY': 'Jan 31 2000',
  'Month D, YYYY': 'January 31, 2000',
  'D Mon YYYY': '31 Jan 2000',
  'DD-Mon-YYYY': '31-Jan-2000',
};

/** How a column of `kind` values in `layout` is written, as an example: `Jan 31 2000 1:30 PM`. */
export function exampleOf(layout: DateLayout, kind: 'date' | 'timestamp' | 'timestamptz', clock12: boolean): string {
  if (kind === 'date') return EXAMPLES[layout];
  const time = clock12 ? '1:30 PM' : '13:30';
  return `${EXAMPLES[layout]} ${time}${kind === 'timestamptz' ? ' +01:00' : ''}`;
}

/**
 * How the values of a column of `type` (as format_type spells it) in `layout` look, as an
 * example: `1,234,567.89`, `Jan 31 2000`, `31/01/2000 1:30 PM`.
 */
export function exampleOfColumn(type: string, layout: Layout, clock12 = false): string {
  if (layout === GROUPED) return /^(bigint|integer|smallint)$/.test(type) ? '1,234,567' : '1,234,567.89';
  const kind = type === 'date' ? 'date' : type.endsWith('with time zone') && !type.endsWith('without time zone') ? 'timestamptz' : 'timestamp';
  return exampleOf(layout, kind, clock12);
}
