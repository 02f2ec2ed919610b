// Statements sent with `standard_conforming_strings = off` (old drivers, psycopg2's tests): Postgres
// then reads a backslash in '…' as an escape, so `'it\'s'` is one string where the parser, which
// reads with the setting on, would see the string end at the second quote. Such a text is judged
// with every plain '…' string written as the E'…' string it is under that setting: the two read
// alike, so what is judged is what runs. The splices are kept as edits, to map positions back.
import { blockCommentEnd, dollarQuotedEnd, isIdentPart, quotedEnd } from './shape.js';
import { applySplices, type Edit, type Splice } from './splices.js';

const QUOTE = 39;
const DOUBLE_QUOTE = 34;

/**
 * `sql` as Postgres reads it with standard_conforming_strings off, in the reading of the parser
 * (E before every plain string literal), with the edits; undefined when nothing changes.
 */
export function withEscapeStrings(sql: string): { sql: string; edits: Edit[] } | undefined {
  if (!sql.includes('\\')) return undefined; // without a backslash both readings agree
  const splices: Splice[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    const prev = i > 0 ? sql.charCodeAt(i - 1) : 0;
    if (c === QUOTE) {
      // A prefix glued to it (E'', B'', X'', N'', U&'') makes it another kind of literal.
      const prefixed = isIdentPart(prev) || prev === 38 /* & */;
      if (!prefixed) splices.push({ from: i, to: i, text: 'E' });
      i = quotedEnd(sql, i, QUOTE, !prefixed || (prev | 0x20) === 101);
    } else if (c === DOUBLE_QUOTE) {
      i = quotedEnd(sql, i, DOUBLE_QUOTE, false);
    } else if (c === 45 && sql.charCodeAt(i + 1) === 45) {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (c === 47 && sql.charCodeAt(i + 1) === 42) {
      i = blockCommentEnd(sql, i);
    } else if (c === 36 /* $ */ && !isIdentPart(prev)) {
      i = dollarQuotedEnd(sql, i) ?? i + 1;
    } else if (isIdentPart(c)) {
      while (i < sql.length && isIdentPart(sql.charCodeAt(i))) i++;
    } else {
      i++;
    }
  }
  if (splices.length === 0) return undefined;
  const { text, edits } = applySplices(sql, splices);
  return { sql: text, edits };
}
