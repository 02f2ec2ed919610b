/**
 * What one cell could be: a bit mask of the types its text fits exactly. A column's type is the
 * most specific type every one of its values fits (see infer.ts). Only texts Postgres reads back
 * unchanged in meaning are accepted: `007` is not a number (it is a code), `1,234` and `$5` are
 * not guessed, and no value is trimmed.
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
  Date: 1 << 5,
  Timestamp: 1 << 6,
  TimestampTz: 1 << 7,
  Json: 1 << 8,
  DateMdySlash: 1 << 9,
  DateDmySlash: 1 << 10,
  DateDmyDot: 1 << 11,
  DateMdyDash: 1 << 12,
  DateDmyDash: 1 << 13,
  DateYmdSlash: 1 << 14,
} as const;

/** Every bit: the mask of a column that has seen no value yet. */
export const ALL = (1 << 15) - 1;

/** Non-ISO date layouts, with the `to_date` pattern that reads each. */
export const DATE_LAYOUTS: readonly { bit: number; pattern: string }[] = [
  { bit: Bit.DateMdySlash, pattern: 'MM/DD/YYYY' },
  { bit: Bit.DateDmySlash, pattern: 'DD/MM/YYYY' },
  { bit: Bit.DateDmyDot, pattern: 'DD.MM.YYYY' },
  { bit: Bit.DateMdyDash, pattern: 'MM-DD-YYYY' },
  { bit: Bit.DateDmyDash, pattern: 'DD-MM-YYYY' },
  { bit: Bit.DateYmdSlash, pattern: 'YYYY/MM/DD' },
];

const INT = /^-?(?:0|[1-9]\d*)$/;
const DECIMAL = /^-?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2})(?::?(\d{2}))?)?$/;
const DMY_OR_MDY = /^(\d{1,2})([/.-])(\d{1,2})[/.-](\d{4})$/;
const YMD_SLASH = /^(\d{4})\/(\d{1,2})\/(\d{1,2})$/;
const BOOLEANS = new Set(['true', 'false', 't', 'f', 'yes', 'no']);
const INT8_MAX = 9223372036854775807n;
const INT8_MIN = -9223372036854775808n;

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** A real calendar day in years 1–9999 (what every date layout must name). */
export function validDate(year: number, month: number, day: number): boolean {
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}

function integerBits(text: string): number {
  const digits = text.charCodeAt(0) === 45 ? text.length - 1 : text.length;
  if (digits <= 15) return Bit.Bigint | Bit.NumericInt | Bit.Double | Bit.NumericAny;
  if (digits <= 19) {
    const n = BigInt(text);
    if (n >= INT8_MIN && n <= INT8_MAX) {
      // Beyond 2^53 a double would change the digits: such a column mixing decimals is NUMERIC.
      const exact = n <= 9007199254740992n && n >= -9007199254740992n;
      return Bit.Bigint | Bit.NumericInt | Bit.NumericAny | (exact ? Bit.Double : 0);
    }
  }
  return Bit.NumericInt | Bit.NumericAny;
}

function decimalBits(text: string): number {
  const n = Number(text);
  // float8 refuses overflow and underflow ("1e400", "1e-400"); numeric takes both exactly.
  if (!Number.isFinite(n) || (n === 0 && /[1-9]/.test(text.replace(/[eE].*$/, '')))) return Bit.NumericAny;
  return Bit.Double | Bit.NumericAny;
}

function timestampBits(m: RegExpExecArray): number {
  const [, y, mo, d, h, mi, s, zone, zh, zm] = m;
  if (!validDate(Number(y), Number(mo), Number(d))) return 0;
  if (Number(h) > 23 || Number(mi) > 59 || (s !== undefined && Number(s) > 59)) return 0;
  if (zone === undefined) return Bit.Timestamp;
  if (zh !== undefined && (Number(zh) > 15 || (zm !== undefined && Number(zm) > 59))) return 0;
  return Bit.TimestampTz;
}

function otherDateBits(text: string): number {
  const ymd = YMD_SLASH.exec(text);
  if (ymd) return validDate(Number(ymd[1]), Number(ymd[2]), Number(ymd[3])) ? Bit.DateYmdSlash : 0;
  const m = DMY_OR_MDY.exec(text);
  if (!m) return 0;
  const a = Number(m[1]);
  const b = Number(m[3]);
  const year = Number(m[4]);
  const sep = m[2];
  if (text.indexOf(sep!, m[1]!.length + 1) !== m[1]!.length + 1 + m[3]!.length) return 0; // one separator throughout
  const mdy = validDate(year, a, b);
  const dmy = validDate(year, b, a);
  switch (sep) {
    case '/':
      return (mdy ? Bit.DateMdySlash : 0) | (dmy ? Bit.DateDmySlash : 0);
    case '-':
      return (mdy ? Bit.DateMdyDash : 0) | (dmy ? Bit.DateDmyDash : 0);
    default:
      return dmy ? Bit.DateDmyDot : 0;
  }
}

function jsonBits(text: string): number {
  const last = text.charCodeAt(text.length - 1);
  if (last !== 125 && last !== 93) return 0;
  // jsonb refuses the NUL character that JSON.parse accepts.
  if (text.includes('\\u0000')) return 0;
  try {
    JSON.parse(text);
    return Bit.Json;
  } catch {
    return 0;
  }
}

/** The types `text` fits; 0 means only TEXT. */
export function classify(text: string): number {
  if (text.length === 0) return 0;
  const c = text.charCodeAt(0);
  if ((c >= 48 && c <= 57) || c === 45 || c === 46) {
    if (INT.test(text)) return integerBits(text);
    if (DECIMAL.test(text)) return /[.eE]/.test(text) ? decimalBits(text) : 0;
    if (c === 45 || c === 46) return 0;
    const iso = ISO_DATE.exec(text);
    if (iso) return validDate(Number(iso[1]), Number(iso[2]), Number(iso[3])) ? Bit.Date | Bit.Timestamp : 0;
    const ts = ISO_TIMESTAMP.exec(text);
    if (ts) return timestampBits(ts);
    return otherDateBits(text);
  }
  if (c === 123 || c === 91) return jsonBits(text);
  if (text.length <= 5 && BOOLEANS.has(text.toLowerCase())) return Bit.Boolean;
  return 0;
}
