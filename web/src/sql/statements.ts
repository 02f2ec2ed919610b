/**
 * Statements of an SQL document, as Postgres' lexer sees them: a `;` ends a statement only
 * outside string constants ('…', E'…' with backslash escapes, $tag$…$tag$), quoted identifiers
 * ("…") and comments (-- to the end of the line, /* … *\/ nested). Pure functions, no editor:
 * the editor page uses them to find the statement to run.
 *
 * Cases (document → statements; `*\/` below stands for the two characters that close a comment):
 *   `SELECT 1; SELECT 2`                        → `SELECT 1`, `SELECT 2`
 *   `SELECT ';' AS a; SELECT 2`                 → `SELECT ';' AS a`, `SELECT 2`
 *   `SELECT 'it''s;'`                           → one statement ('' is a quote inside the string)
 *   `SELECT E'a\';b'; SELECT 2`                 → `SELECT E'a\';b'`, `SELECT 2` (\' escapes in E'')
 *   `SELECT 'a\'; SELECT 2`                     → `SELECT 'a\'`, `SELECT 2` (no escapes in plain '')
 *   `SELECT "a;b"""; SELECT 2`                  → `SELECT "a;b"""`, `SELECT 2`
 *   `DO $$ BEGIN x; END $$; SELECT 2`           → `DO $$ BEGIN x; END $$`, `SELECT 2`
 *   `SELECT $f$ $$; $f$; SELECT 2`              → `SELECT $f$ $$; $f$`, `SELECT 2` (tags must match)
 *   `SELECT $1; SELECT a$b$c`                   → `SELECT $1`, `SELECT a$b$c` ($1 and a$b are no quotes)
 *   `SELECT 1 -- a; b\n; SELECT 2`              → `SELECT 1 -- a; b`, `SELECT 2`
 *   `SELECT /* a /* ; *\/ ; *\/ 1; SELECT 2`    → `SELECT /* a /* ; *\/ ; *\/ 1`, `SELECT 2` (nested)
 *   `SELECT 1;;  ;\n-- only a comment\n`        → `SELECT 1` (blank statements and lone comments are skipped)
 *   `SELECT 'unclosed; SELECT 2`                → one statement up to the end (as Postgres would read it)
 */

export interface Statement {
  /** Offset of its first character that is not white space. */
  from: number;
  /** Offset just after its last character that is not white space (the `;` excluded). */
  to: number;
  /** Offset just after its `;`, or the end of the document for the last one. */
  end: number;
  text: string;
}

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
/** Characters that continue an identifier or a keyword (so `a$b$` is a name, not a dollar quote). */
const isIdentChar = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}_$]/u.test(c);
const DOLLAR_TAG = /\$(?:[\p{L}_][\p{L}\p{N}_]*)?\$/uy;

/**
 * Where the token starting at `i` ends, for the tokens that may hold a `;`: strings, quoted
 * identifiers, dollar quotes and comments. Returns `i` itself when no such token starts there.
 * An unterminated token runs to the end of the text.
 */
function skipQuoted(sql: string, i: number): number {
  const c = sql[i];
  const n = sql.length;
  if (c === "'") {
    // E'…' (and e'…') allow backslash escapes, unless the E ends a longer word (`somee'x'`).
    const escapes = (sql[i - 1] === 'E' || sql[i - 1] === 'e') && !isIdentChar(sql[i - 2]);
    for (let j = i + 1; j < n; j++) {
      if (escapes && sql[j] === '\\') j++;
      else if (sql[j] === "'") {
        if (sql[j + 1] === "'") j++;
        else return j + 1;
      }
    }
    return n;
  }
  if (c === '"') {
    for (let j = i + 1; j < n; j++) {
      if (sql[j] === '"') {
        if (sql[j + 1] === '"') j++;
        else return j + 1;
      }
    }
    return n;
  }
  if (c === '-' && sql[i + 1] === '-') {
    const eol = sql.indexOf('\n', i + 2);
    return eol === -1 ? n : eol;
  }
  if (c === '/' && sql[i + 1] === '*') {
    let depth = 1;
    let j = i + 2;
    while (j < n && depth > 0) {
      if (sql[j] === '/' && sql[j + 1] === '*') {
        depth++;
        j += 2;
      } else if (sql[j] === '*' && sql[j + 1] === '/') {
        depth--;
        j += 2;
      } else j++;
    }
    return j;
  }
  if (c === '$' && !isIdentChar(sql[i - 1])) {
    DOLLAR_TAG.lastIndex = i;
    const tag = DOLLAR_TAG.exec(sql)?.[0];
    if (tag === undefined) return i;
    const close = sql.indexOf(tag, i + tag.length);
    return close === -1 ? n : close + tag.length;
  }
  return i;
}

/** True when `text` holds nothing but white space and comments. */
function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; ) {
    if (isSpace(text[i])) {
      i++;
      continue;
    }
    const isComment = (text[i] === '-' && text[i + 1] === '-') || (text[i] === '/' && text[i + 1] === '*');
    if (!isComment) return false;
    i = skipQuoted(text, i);
  }
  return true;
}

function statementOf(sql: string, start: number, stop: number, end: number): Statement | null {
  let from = start;
  let to = stop;
  while (from < to && isSpace(sql[from])) from++;
  while (to > from && isSpace(sql[to - 1])) to--;
  const text = sql.slice(from, to);
  return isBlank(text) ? null : { from, to, end, text };
}

/** The statements of `sql`, in order; blank ones (white space, comments, lone `;`) left out. */
export function splitStatements(sql: string): Statement[] {
  const out: Statement[] = [];
  let start = 0;
  for (let i = 0; i < sql.length; ) {
    if (sql[i] === ';') {
      const s = statementOf(sql, start, i, i + 1);
      if (s) out.push(s);
      start = ++i;
      continue;
    }
    const next = skipQuoted(sql, i);
    i = next > i ? next : i + 1;
  }
  const last = statementOf(sql, start, sql.length, sql.length);
  if (last) out.push(last);
  return out;
}

/**
 * The statement to run for a cursor at `pos`: the one whose text or `;` it touches; in the blank
 * stretch between two statements, the one before (so the cursor just after `SELECT 1;` or on the
 * empty line below it means `SELECT 1`); before the first statement, the first. Null when the
 * document holds none.
 */
export function statementAt(sql: string, pos: number): Statement | null {
  const all = splitStatements(sql);
  let chosen: Statement | null = null;
  for (const s of all) {
    if (pos < s.from) return chosen ?? s;
    chosen = s;
    if (pos <= s.end) return s;
  }
  return chosen;
}

/**
 * The offset in UTF-16 code units (as the editor counts) of a 1-based character position as
 * Postgres reports it (it counts characters, so a character outside the BMP is one), clamped to
 * the text.
 */
export function offsetOfPosition(text: string, position: number): number {
  let offset = 0;
  for (let chars = 1; chars < position && offset < text.length; chars++) {
    const code = text.charCodeAt(offset);
    offset += code >= 0xd800 && code <= 0xdbff && offset + 1 < text.length ? 2 : 1;
  }
  return Math.min(offset, text.length);
}
