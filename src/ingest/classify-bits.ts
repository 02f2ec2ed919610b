/**
 * The bits of a cell's classification (classify.ts, classify-bytes.ts, written.ts): what types
 * its text fits, and how it is written. A column's mask is the AND of its values' masks, so each
 * dimension narrows on its own: a column is a number only while some number type *and* some way
 * of writing numbers is left, a date only while some date kind *and* some layout is left.
 */

export const Bit = {
  Boolean: 1 << 0,
  /** Integer within int8. */
  Bigint: 1 << 1,
  /** Integer beyond int8 (only integers: a column of them is NUMERIC). */
  NumericInt: 1 << 2,
  Double: 1 << 3,
  /** Any number, as the fallback of a column mixing huge integers with decimals. */
  NumericAny: 1 << 4,
  /** A day (it also reads as midnight, so it fits Timestamp too). */
  Date: 1 << 5,
  Timestamp: 1 << 6,
  TimestampTz: 1 << 7,
  Json: 1 << 8,

  /** A number written with bare digits (`1234.5`, `6e23`). */
  Bare: 1 << 9,
  /** A number with its thousands grouped by commas (`1,234.5`); one under 1,000 is both. */
  Grouped: 1 << 10,

  /** Date layouts: ISO 8601, and those of written.ts. */
  Iso: 1 << 11,
  YmdSlash: 1 << 12,
  MdySlash: 1 << 13,
  DmySlash: 1 << 14,
  DmyDot: 1 << 15,
  MdyDash: 1 << 16,
  DmyDash: 1 << 17,
  MonDY: 1 << 18,
  MonDCommaY: 1 << 19,
  DMonY: 1 << 20,
  DMonYDash: 1 << 21,

  /** The clock of a time: 0–23, or 1–12 with AM/PM (a day alone fits both). */
  Clock24: 1 << 22,
  Clock12: 1 << 23,
} as const;

/** Every bit: the mask of a column that has seen no value yet. */
export const ALL = (1 << 24) - 1;

/** Bits of the ways numbers are written. */
export const NUMBER_FORMS = Bit.Bare | Bit.Grouped;

/** Bits of the date layouts. */
export const LAYOUTS = Bit.Iso | Bit.YmdSlash | Bit.MdySlash | Bit.DmySlash | Bit.DmyDot | Bit.MdyDash | Bit.DmyDash | Bit.MonDY | Bit.MonDCommaY | Bit.DMonY | Bit.DMonYDash;

/** What an ISO date fits: a date (or midnight) in ISO layout, at any clock. */
export const ISO_DATE_BITS = Bit.Date | Bit.Timestamp | Bit.Iso | Bit.Clock24 | Bit.Clock12;

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** A real calendar day in years 1–9999 (what every date layout must name). */
export function validDate(year: number, month: number, day: number): boolean {
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}
