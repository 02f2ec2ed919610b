/**
 * classify.ts's rules over UTF-8 bytes, without making a string: the hot loop of a CSV upload
 * classifies every field of every row, and a string per field (plus the regular expressions) was
 * most of the time inference took. Each rule below is classify.ts's regular expression written
 * as a scan of char codes. What is rare or needs a real parser (JSON, numbers long enough to
 * overflow a double, 16–19 digit integers near the int8 bounds) answers `SLOW`: the caller then
 * makes the string and asks classify() itself. The unit tests run both over the fixtures and
 * over random near-miss texts and require the same answer.
 */
import { isDigit } from '../shared/chars.js';
import { Bit, ISO_DATE_BITS, validDate } from './classify-bits.js';
import { writtenDateBits } from './written.js';

/** "Build the string and use classify()": only classify.ts's own code can tell. */
export const SLOW = -1;

const INT_BITS = Bit.Bigint | Bit.NumericInt | Bit.Double | Bit.NumericAny;
const DECIMAL_BITS = Bit.Double | Bit.NumericAny;
/** How a bare number is written: bare, and also grouped when it has at most three integer digits and no exponent. */
const bareForms = (intDigits: number, expDigits: number): number => Bit.Bare | (intDigits <= 3 && expDigits === 0 ? Bit.Grouped : 0);

/** Digits b[s..e) as a number (callers keep e - s small). */
function num(b: Uint8Array, s: number, e: number): number {
  let n = 0;
  for (let i = s; i < e; i++) n = n * 10 + b[i]! - 48;
  return n;
}

/** Whether b[from..to) holds only digits. */
function allDigits(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isDigit(b[i])) return false;
  return true;
}

/** Lower-cased ASCII letters of b[s..e) (5 at most) packed in one number; -1 if any byte is not a letter. */
function word(b: Uint8Array, s: number, e: number): number {
  let w = 0;
  for (let i = s; i < e; i++) {
    let c = b[i]!;
    if (c >= 65 && c <= 90) c += 32;
    else if (c < 97 || c > 122) return -1;
    w = w * 32 + (c - 96);
  }
  return w;
}

const BOOLEAN_WORDS = new Set(['true', 'false', 't', 'f', 'yes', 'no'].map((t) => word(Buffer.from(t), 0, t.length)));

/** Digits `from..` of "9223372036854775807" (int8 max) / "9007199254740992" (2^53), for same-length comparisons. */
const INT8_MAX = Buffer.from('9223372036854775807');
const INT8_MIN_ABS = Buffer.from('9223372036854775808');
const EXACT_DOUBLE = Buffer.from('9007199254740992');

/** Compares `len` digits at b[s..] with `limit` (same length): <0, 0 or >0. */
function compareDigits(b: Uint8Array, s: number, limit: Buffer): number {
  for (let k = 0; k < limit.length; k++) {
    const d = b[s + k]! - limit[k]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** classify.ts's integerBits for a canonical integer of `digits` digits at b[s..]. */
function integerBits(b: Uint8Array, s: number, digits: number, negative: boolean): number {
  if (digits <= 15) return INT_BITS;
  if (digits > 19) return Bit.NumericInt | Bit.NumericAny;
  const inInt8 = digits < 19 || compareDigits(b, s, negative ? INT8_MIN_ABS : INT8_MAX) <= 0;
  if (!inInt8) return Bit.NumericInt | Bit.NumericAny;
  const exact = digits < 16 || (digits === 16 && compareDigits(b, s, EXACT_DOUBLE) <= 0);
  return Bit.Bigint | Bit.NumericInt | Bit.NumericAny | (exact ? Bit.Double : 0);
}

/**
 * Numbers: INT, then DECIMAL, then GROUPED, as classify.ts orders them. Returns undefined when
 * the text is none of them (a date may still match), the bits otherwise.
 */
function numberBits(b: Uint8Array, s: number, e: number): number | undefined {
  const negative = b[s] === 45;
  const intStart = negative ? s + 1 : s;
  let i = intStart;
  while (i < e && isDigit(b[i])) i++;
  const intDigits = i - intStart;
  if (intDigits > 1 && b[intStart] === 48) return undefined; // leading zero: neither INT nor DECIMAL
  if (i === e) return intDigits === 0 ? undefined : integerBits(b, intStart, intDigits, negative) | bareForms(intDigits, 0);
  if (b[i] === 44) return groupedBits(b, s, intStart, i, e);
  let fracDigits = 0;
  if (b[i] === 46) {
    const fracStart = ++i;
    while (i < e && isDigit(b[i])) i++;
    fracDigits = i - fracStart;
  }
  if (intDigits === 0 && fracDigits === 0) return undefined;
  let expDigits = 0;
  if (i < e && (b[i] === 101 || b[i] === 69)) {
    i++;
    if (b[i] === 43 || b[i] === 45) i++;
    const expStart = i;
    while (i < e && isDigit(b[i])) i++;
    expDigits = i - expStart;
    if (expDigits === 0) return undefined;
  }
  if (i !== e) return undefined;
  // Without an exponent a text this short neither overflows a double nor underflows to 0; with a
  // two-digit exponent neither does a mantissa of 32 characters. Anything longer: classify().
  if (expDigits === 0 ? e - s <= 300 : expDigits <= 2 && e - s <= 32) return DECIMAL_BITS | bareForms(intDigits, expDigits);
  return SLOW;
}

/**
 * GROUPED (`-?[1-9]\d{0,2}(,\d{3})+(\.\d*)?`) from the first comma at `comma`: 0 when the text
 * is not that (nor any other number or a date, since a date has no comma after its first digits).
 */
function groupedBits(b: Uint8Array, s: number, intStart: number, comma: number, e: number): number {
  const lead = comma - intStart;
  if (lead === 0 || lead > 3 || b[intStart] === 48) return 0;
  let i = comma;
  let intDigits = lead;
  while (i < e && b[i] === 44) {
    if (e - i < 4 || !isDigit(b[i + 1]) || !isDigit(b[i + 2]) || !isDigit(b[i + 3])) return 0;
    i += 4;
    intDigits += 3;
  }
  if (i < e && isDigit(b[i])) return 0;
  if (i === e) return intDigits <= 15 ? INT_BITS | Bit.Grouped : SLOW;
  if (b[i] !== 46) return 0;
  i++;
  while (i < e && isDigit(b[i])) i++;
  if (i !== e) return 0;
  // Decimals this short neither overflow nor underflow a double; others: classify().
  return e - s <= 300 ? DECIMAL_BITS | Bit.Grouped : SLOW;
}

/** ISO_TIMESTAMP's tail after "YYYY-MM-DD": [T ]hh:mm(:ss(.f{1,9})?)?(Z|[+-]hh(:?mm)?)? */
function timestampBits(b: Uint8Array, s: number, e: number): number {
  let i = s + 10;
  if (e - i < 6 || (b[i] !== 84 && b[i] !== 32) || !allDigits(b, i + 1, i + 3) || b[i + 3] !== 58 || !allDigits(b, i + 4, i + 6)) return 0;
  const hour = num(b, i + 1, i + 3);
  const minute = num(b, i + 4, i + 6);
  i += 6;
  let second = 0;
  if (b[i] === 58 && i < e) {
    if (e - i < 3 || !allDigits(b, i + 1, i + 3)) return 0;
    second = num(b, i + 1, i + 3);
    i += 3;
    if (b[i] === 46 && i < e) {
      const from = ++i;
      while (i < e && isDigit(b[i])) i++;
      if (i === from || i - from > 9) return 0;
    }
  }
  let bits: number = Bit.Timestamp;
  if (i < e) {
    const z = b[i];
    if (z === 90) i++;
    else if (z === 43 || z === 45) {
      if (e - i < 3 || !allDigits(b, i + 1, i + 3)) return 0;
      const zh = num(b, i + 1, i + 3);
      i += 3;
      let zm = 0;
      if (i < e) {
        if (b[i] === 58) i++;
        if (e - i !== 2 || !allDigits(b, i, i + 2)) return 0;
        zm = num(b, i, i + 2);
        i += 2;
      }
      if (zh > 15 || zm > 59) return 0;
    } else return 0;
    if (i !== e) return 0;
    bits = Bit.TimestampTz;
  }
  if (!validDate(num(b, s, s + 4), num(b, s + 5, s + 7), num(b, s + 8, s + 10))) return 0;
  return hour > 23 || minute > 59 || second > 59 ? 0 : bits | Bit.Iso | Bit.Clock24;
}

/** The types the UTF-8 text b[s..e) fits, as classify() answers for the same text; or SLOW. */
export function classifyBytes(b: Uint8Array, s: number, e: number): number {
  const len = e - s;
  if (len === 0) return 0;
  const c = b[s]!;
  if (isDigit(c) || c === 45 || c === 46) {
    const n = numberBits(b, s, e);
    if (n !== undefined) return n;
    if (c === 45 || c === 46) return 0;
    if (len >= 10 && allDigits(b, s, s + 4) && b[s + 4] === 45 && allDigits(b, s + 5, s + 7) && b[s + 7] === 45 && allDigits(b, s + 8, s + 10)) {
      if (len === 10) return validDate(num(b, s, s + 4), num(b, s + 5, s + 7), num(b, s + 8, s + 10)) ? ISO_DATE_BITS : 0;
      return timestampBits(b, s, e);
    }
    return writtenDateBits(b, s, e);
  }
  if (c === 123 || c === 91) {
    const last = b[e - 1];
    return last === 125 || last === 93 ? SLOW : 0;
  }
  if (len > 5) return writtenDateBits(b, s, e); // a boolean word is ASCII, so at most 5 bytes
  const w = word(b, s, e);
  return w >= 0 && BOOLEAN_WORDS.has(w) ? Bit.Boolean : 0;
}
