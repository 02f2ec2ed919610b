// The shape of a statement: its text with every numeric literal replaced by `0`.
//
// Why: the analysis never depends on a number's value (numbers name no relation, function or
// setting), but clients that inline values — pgbench -M simple, ORMs without parameters — send a
// new text for every call, and analysing each one costs ~50 µs where a cached decision costs
// under 1 µs. Statements of one shape share one analysis. Strings are never touched: they can
// name objects (`'bob/x.t'::regclass`, `nextval('…')`).
//
// One pass over char codes, knowing what can hide digits: quoted identifiers, string literals
// (incl. E'' with backslashes, dollar quotes), comments (nested /* */), parameters ($1), and
// digits inside identifiers (t1, a$2).

import { isDigit, isLetter } from '../shared/chars.js';

const enum C {
  Dollar = 36,
  Quote = 39,
  DoubleQuote = 34,
  Star = 42,
  Plus = 43,
  Minus = 45,
  Dot = 46,
  Slash = 47,
  Backslash = 92,
  Underscore = 95,
}

const NUMBER = /^(?:(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?|0[xX][\da-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+)$/;

/** ASCII codes that may continue an identifier: letters, digits, `_` and `$`. */
const IDENT_PART = new Uint8Array(128);
for (let c = 0; c < 128; c++) IDENT_PART[c] = isLetter(c) || isDigit(c) || c === C.Underscore || c === C.Dollar ? 1 : 0;

/** Whether `c` may continue an identifier (past the end, NaN: no). */
export const isIdentPart = (c: number) => c >= 0x80 || IDENT_PART[c] === 1;

/** End index (exclusive) of the quoted text starting at `i` (at the opening quote). */
export function quotedEnd(sql: string, i: number, quote: number, backslashes: boolean): number {
  let j = i + 1;
  while (j < sql.length) {
    const c = sql.charCodeAt(j);
    if (backslashes && c === C.Backslash) {
      j += 2;
    } else if (c === quote) {
      if (sql.charCodeAt(j + 1) === quote) j += 2;
      else return j + 1;
    } else {
      j++;
    }
  }
  return sql.length;
}

/** End index (exclusive) of the block comment starting at `i`, nested ones included. */
export function blockCommentEnd(sql: string, i: number): number {
  let depth = 0;
  let j = i;
  while (j < sql.length) {
    const c = sql.charCodeAt(j);
    if (c === C.Slash && sql.charCodeAt(j + 1) === C.Star) {
      depth++;
      j += 2;
    } else if (c === C.Star && sql.charCodeAt(j + 1) === C.Slash) {
      depth--;
      j += 2;
      if (depth === 0) return j;
    } else {
      j++;
    }
  }
  return sql.length;
}

/** End of a numeric literal starting at `i`: digits, `.`, exponent with sign, `0x…`, `1_000`. */
function numberEnd(sql: string, i: number): number {
  let j = i;
  while (j < sql.length) {
    const c = sql.charCodeAt(j);
    if (isDigit(c) || isLetter(c) || c === C.Underscore || c === C.Dot) {
      j++;
    } else if ((c === C.Plus || c === C.Minus) && (sql.charCodeAt(j - 1) | 0x20) === 101 /* e */ && isDigit(sql.charCodeAt(j + 1)) && !/0x/i.test(sql.slice(i, j))) {
      j++;
    } else {
      break;
    }
  }
  return j;
}

/** End index (exclusive) of the $tag$…$tag$ string starting at `i`, or undefined when `$` starts none. */
export function dollarQuotedEnd(sql: string, i: number): number | undefined {
  const tag = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 64));
  if (tag === null) return undefined;
  const close = sql.indexOf(tag[0], i + tag[0].length);
  return close < 0 ? sql.length : close + tag[0].length;
}

/** Whether the digits of a number run from `i` to `end` (the common case: no need for NUMBER). */
function plainDigits(sql: string, i: number, end: number): boolean {
  for (let j = i; j < end; j++) if (!isDigit(sql.charCodeAt(j))) return false;
  return true;
}

/**
 * Where the statement's numeric literals are: start and end (exclusive) of each, in order, or
 * undefined when it has none or one that is not a plain number (`1abc`, which Postgres versions
 * lex differently): its text is then its own shape. One pass over char codes; the regular
 * expression only for numbers that are not plain digits.
 */
export function literalSpans(sql: string): number[] | undefined {
  let spans: number[] | undefined;
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (isLetter(c) || c === C.Underscore || c >= 0x80) {
      // A word: its digits (t1, a$2) are part of it.
      i++;
      while (i < n && isIdentPart(sql.charCodeAt(i))) i++;
      continue;
    }
    const prev = i > 0 ? sql.charCodeAt(i - 1) : 0;
    if (c === C.Quote) {
      // E'…' / e'…' take backslash escapes (only when E is a word of its own)
      const escape = (prev | 0x20) === 101 && !(i > 1 && isIdentPart(sql.charCodeAt(i - 2)));
      i = quotedEnd(sql, i, C.Quote, escape);
    } else if (c === C.DoubleQuote) {
      i = quotedEnd(sql, i, C.DoubleQuote, false);
    } else if (c === C.Minus && sql.charCodeAt(i + 1) === C.Minus) {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
    } else if (c === C.Slash && sql.charCodeAt(i + 1) === C.Star) {
      i = blockCommentEnd(sql, i);
    } else if (c === C.Dollar && !isIdentPart(prev)) {
      if (isDigit(sql.charCodeAt(i + 1))) {
        i++;
        while (i < n && isDigit(sql.charCodeAt(i))) i++; // a parameter: $1 stays $1
      } else {
        i = dollarQuotedEnd(sql, i) ?? i + 1;
      }
    } else if ((isDigit(c) || (c === C.Dot && isDigit(sql.charCodeAt(i + 1)))) && !isIdentPart(prev) && prev !== C.Dot) {
      const end = numberEnd(sql, i);
      if (!plainDigits(sql, i, end) && !NUMBER.test(sql.slice(i, end))) return undefined;
      (spans ??= []).push(i, end);
      i = end;
    } else if (isIdentPart(c)) {
      i++;
      while (i < n && isIdentPart(sql.charCodeAt(i))) i++;
    } else {
      i++;
    }
  }
  return spans;
}

/**
 * The statement with its numeric literals replaced by `0`, or undefined when it has none (its
 * text is then its own shape). On the wire's hot path for every statement with inlined values
 * that a client's memo (statement-memo.ts) does not recognise.
 */
export function literalShape(sql: string): string | undefined {
  const spans = literalSpans(sql);
  if (spans === undefined) return undefined;
  let out = '';
  let copied = 0;
  for (let k = 0; k < spans.length; k += 2) {
    out += `${sql.slice(copied, spans[k])}0`;
    copied = spans[k + 1]!;
  }
  return out + sql.slice(copied);
}

/**
 * Whether `sql` is `known`, whose numeric literals are at `spans` (literalSpans) and all plain
 * digits (plainSpans), with each of them replaced by plain digits, one or more. Then
 * `literalShape` gives both the same shape: the text around each literal is the same, and is read
 * alike, since what follows a literal is read after a digit in both (after `5.`, `$$` opens a
 * string; after `5`, it does not); and where a number began in `known`, a run of digits followed
 * by the character that ended that number (no digit, letter, `_` or `.`) is one plain number.
 */
export function sameShapeAs(sql: string, known: string, spans: readonly number[]): boolean {
  let i = 0;
  let j = 0;
  for (let k = 0; k < spans.length; k += 2) {
    const start = spans[k]!;
    while (j < start) if (sql.charCodeAt(i++) !== known.charCodeAt(j++)) return false;
    const from = i;
    while (isDigit(sql.charCodeAt(i))) i++;
    if (i === from) return false;
    j = spans[k + 1]!;
  }
  if (sql.length - i !== known.length - j) return false;
  while (j < known.length) if (sql.charCodeAt(i++) !== known.charCodeAt(j++)) return false;
  return true;
}

/** Whether every literal at `spans` in `sql` is plain digits: what `sameShapeAs` can compare with. */
export function plainSpans(sql: string, spans: readonly number[]): boolean {
  for (let k = 0; k < spans.length; k += 2) if (!plainDigits(sql, spans[k]!, spans[k + 1]!)) return false;
  return true;
}
