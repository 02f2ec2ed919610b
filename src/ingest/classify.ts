/**
 * What one cell could be: a bit mask (classify-bits.ts) of the types its text fits exactly, and
 * of how it is written. A column's type is the most specific type every one of its values fits
 * (see infer.ts). Only texts whose meaning is certain are accepted: `007` is not a number (it is
 * a code), `$5` and `1,23` are not guessed, and no value is trimmed. Numbers may group their
 * thousands with commas (`1,234,567.5`, as spreadsheets export them), dates may be written in
 * the layouts of written.ts besides ISO.
 */
import { ALL, Bit, ISO_DATE_BITS, validDate } from './classify-bits.js';
import { writtenDateBits } from './written.js';

export { ALL, Bit, validDate };

const INT = /^-?(?:0|[1-9]\d*)$/;
const DECIMAL = /^-?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;
const GROUPED = /^-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?$/;
/** A bare number of at most three integer digits and no exponent is also its own grouped form. */
const SHORT = /^-?\d{0,3}(?:\.\d*)?$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2})(?::?(\d{2}))?)?$/;
const BOOLEANS = new Set(['true', 'false', 't', 'f', 'yes', 'no']);
const INT8_MAX = 9223372036854775807n;
const INT8_MIN = -9223372036854775808n;

/** The number types of a canonical integer. */
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

/** The number types of a decimal (a point or an exponent). */
function decimalBits(text: string): number {
  const n = Number(text);
  // float8 refuses overflow and underflow ("1e400", "1e-400"); numeric takes both exactly.
  if (!Number.isFinite(n) || (n === 0 && /[1-9]/.test(text.replace(/[eE].*$/, '')))) return Bit.NumericAny;
  return Bit.Double | Bit.NumericAny;
}

function numberBits(text: string): number {
  if (INT.test(text)) return integerBits(text) | Bit.Bare | (SHORT.test(text) ? Bit.Grouped : 0);
  if (DECIMAL.test(text)) return /[.eE]/.test(text) ? decimalBits(text) | Bit.Bare | (SHORT.test(text) ? Bit.Grouped : 0) : 0;
  if (!GROUPED.test(text)) return 0;
  const bare = text.replaceAll(',', '');
  return (bare.includes('.') ? decimalBits(bare) : integerBits(bare)) | Bit.Grouped;
}

function timestampBits(m: RegExpExecArray): number {
  const [, y, mo, d, h, mi, s, zone, zh, zm] = m;
  if (!validDate(Number(y), Number(mo), Number(d))) return 0;
  if (Number(h) > 23 || Number(mi) > 59 || (s !== undefined && Number(s) > 59)) return 0;
  if (zone === undefined) return Bit.Timestamp | Bit.Iso | Bit.Clock24;
  if (zh !== undefined && (Number(zh) > 15 || (zm !== undefined && Number(zm) > 59))) return 0;
  return Bit.TimestampTz | Bit.Iso | Bit.Clock24;
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

/** The types `text` fits, and how it is written; 0 means only TEXT. */
export function classify(text: string): number {
  if (text.length === 0) return 0;
  const c = text.charCodeAt(0);
  if ((c >= 48 && c <= 57) || c === 45 || c === 46) {
    const n = numberBits(text);
    if (n !== 0 || c === 45 || c === 46) return n;
    const iso = ISO_DATE.exec(text);
    if (iso) return validDate(Number(iso[1]), Number(iso[2]), Number(iso[3])) ? ISO_DATE_BITS : 0;
    const ts = ISO_TIMESTAMP.exec(text);
    if (ts) return timestampBits(ts);
    return writtenDateBits(Buffer.from(text, 'utf8'), 0, Buffer.byteLength(text, 'utf8'));
  }
  if (c === 123 || c === 91) return jsonBits(text);
  if (text.length <= 5) return BOOLEANS.has(text.toLowerCase()) ? Bit.Boolean : 0;
  const b = Buffer.from(text, 'utf8');
  return writtenDateBits(b, 0, b.length);
}
