// Large statements in little: ORMs and pandas send `INSERT … VALUES (…), (…), …` of many
// megabytes, whose parse tree would be many times their size (the JSON of a 64 MiB statement does
// not fit a JavaScript string). A row of nothing but constants — numbers, strings, parameters,
// NULL, TRUE, FALSE, DEFAULT, signs — names nothing and runs nothing, so the decision on a VALUES
// list is the same with one such row as with a hundred thousand: each run of them is cut to its
// first row before the parse. Rows with anything else (a cast, a function call, a column, a
// sub-select) stay, so what they name is checked as always. The cut is kept as edits, with which
// the analysis maps its positions back to the text the client sent.
//
// One pass over char codes, without tokens (a token list of 64 MiB would take gigabytes).
import { isDigit, isLetter } from '../shared/chars.js';
import { blockCommentEnd, dollarQuotedEnd, isIdentPart, quotedEnd } from './shape.js';
import { applySplices, type Edit, type Splice } from './splices.js';

/** Statements shorter than this are analysed whole (the scan would cost more than it saves). */
export const COMPACT_MIN_CHARS = 256 * 1024;

const QUOTE = 39;
const DOUBLE_QUOTE = 34;
const DOLLAR = 36;

/** Whether sql[start, end) is `word` (lower case), in any case: without making a string of it. */
function wordIs(sql: string, start: number, end: number, word: string): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if ((sql.charCodeAt(start + k) | 0x20) !== word.charCodeAt(k)) return false;
  return true;
}

const constantWords = ['null', 'true', 'false', 'default'];
/** Prefixes glued to a string literal: E'…', B'…', X'…', N'…'. */
const stringPrefixes = ['e', 'b', 'x', 'n'];

/** Scans a query string; `i` is always at the next unread char. */
class Scanner {
  i = 0;
  constructor(readonly sql: string) {}

  /** Skips whitespace and comments. */
  space(): void {
    const s = this.sql;
    for (;;) {
      const c = s.charCodeAt(this.i);
      if (c === 32 || c === 9 || c === 10 || c === 13 || c === 12) this.i++;
      else if (c === 45 && s.charCodeAt(this.i + 1) === 45) {
        const nl = s.indexOf('\n', this.i);
        this.i = nl < 0 ? s.length : nl + 1;
      } else if (c === 47 && s.charCodeAt(this.i + 1) === 42) this.i = blockCommentEnd(s, this.i);
      else return;
    }
  }

  /** Past a word at `i` (letters, digits, _ and $); where it started. */
  word(): number {
    const start = this.i;
    while (this.i < this.sql.length && isIdentPart(this.sql.charCodeAt(this.i))) this.i++;
    return start;
  }

  /**
   * Past one row `( … )` starting at `i`; whether it holds constants only. Quoted text is
   * skipped whole, so a parenthesis inside a string never counts.
   */
  row(): boolean | undefined {
    const s = this.sql;
    let depth = 0;
    let constant = true;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 40) {
        depth++;
        this.i++;
      } else if (c === 41) {
        this.i++;
        if (--depth === 0) return constant;
      } else if (c === QUOTE) {
        this.i = quotedEnd(s, this.i, QUOTE, false);
      } else if (c === DOUBLE_QUOTE) {
        constant = false;
        this.i = quotedEnd(s, this.i, DOUBLE_QUOTE, false);
      } else if (c === DOLLAR) {
        if (isDigit(s.charCodeAt(this.i + 1))) {
          this.i++;
          while (isDigit(s.charCodeAt(this.i))) this.i++; // a parameter
        } else {
          const end = dollarQuotedEnd(s, this.i);
          if (end === undefined) {
            constant = false;
            this.i++;
          } else {
            this.i = end;
          }
        }
      } else if (isDigit(c) || (c === 46 && isDigit(s.charCodeAt(this.i + 1)))) {
        this.i++;
        // Digits, a fraction, an exponent: e+5 has a sign inside the number.
        while (this.i < s.length) {
          const d = s.charCodeAt(this.i);
          if (isIdentPart(d) || d === 46) this.i++;
          else if ((d === 43 || d === 45) && (s.charCodeAt(this.i - 1) | 0x20) === 101) this.i++;
          else break;
        }
      } else if (isLetter(c) || c === 95 || c >= 0x80) {
        const start = this.word();
        const is = (w: string) => wordIs(s, start, this.i, w);
        if (s.charCodeAt(this.i) === QUOTE && stringPrefixes.some(is)) this.i = quotedEnd(s, this.i, QUOTE, is('e'));
        else if (!constantWords.some(is)) constant = false; // U&'…' too: its escapes are for the parser
      } else if (c === 45 && s.charCodeAt(this.i + 1) === 45) {
        this.space();
      } else if (c === 47 && s.charCodeAt(this.i + 1) === 42) {
        this.space();
      } else {
        if (c !== 44 && c !== 43 && c !== 45 && c !== 32 && c !== 9 && c !== 10 && c !== 13 && c !== 12) constant = false;
        this.i++;
      }
    }
    return undefined; // unterminated: the parser will say so
  }
}

/**
 * The text with every run of constant VALUES rows cut to its first row, and the edits that did
 * it; undefined when there is nothing to cut.
 */
export function compactValues(sql: string): { sql: string; edits: Edit[] } | undefined {
  const scan = new Scanner(sql);
  const splices: Splice[] = [];
  const s = sql;
  while (scan.i < s.length) {
    const c = s.charCodeAt(scan.i);
    const prev = scan.i > 0 ? s.charCodeAt(scan.i - 1) : 0;
    if (c === QUOTE) {
      const escape = (prev | 0x20) === 101 && !(scan.i > 1 && isIdentPart(s.charCodeAt(scan.i - 2)));
      scan.i = quotedEnd(s, scan.i, QUOTE, escape);
    } else if (c === DOUBLE_QUOTE) {
      scan.i = quotedEnd(s, scan.i, DOUBLE_QUOTE, false);
    } else if ((c === 45 && s.charCodeAt(scan.i + 1) === 45) || (c === 47 && s.charCodeAt(scan.i + 1) === 42)) {
      scan.space();
    } else if (c === DOLLAR && !isIdentPart(prev)) {
      scan.i = (isDigit(s.charCodeAt(scan.i + 1)) ? undefined : dollarQuotedEnd(s, scan.i)) ?? scan.i + 1;
    } else if (isIdentPart(c)) {
      if (isIdentPart(prev)) {
        scan.i++;
      } else if (wordIs(s, scan.word(), scan.i, 'values')) {
        rows(scan, splices);
      }
    } else {
      scan.i++;
    }
  }
  if (splices.length === 0) return undefined;
  const { text, edits } = applySplices(sql, splices);
  return { sql: text, edits };
}

/** The rows after VALUES: each run of constant rows is cut back to its first. */
function rows(scan: Scanner, splices: Splice[]): void {
  let keptEnd = -1; // where the first row of the current run of constant rows ends
  let cutTo = -1;
  const endRun = () => {
    if (keptEnd >= 0 && cutTo > keptEnd) splices.push({ from: keptEnd, to: cutTo, text: '' });
    keptEnd = -1;
    cutTo = -1;
  };
  for (;;) {
    scan.space();
    if (scan.sql.charCodeAt(scan.i) !== 40) break;
    const constant = scan.row();
    if (constant === undefined) break;
    if (!constant) endRun();
    else if (keptEnd < 0) keptEnd = scan.i;
    else cutTo = scan.i;
    scan.space();
    if (scan.sql.charCodeAt(scan.i) !== 44) break;
    scan.i++;
  }
  endRun();
}
