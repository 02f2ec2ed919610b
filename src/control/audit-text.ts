/**
 * The SQL text an audit row keeps: bounded, and without secrets. A statement that mentions a
 * password or secret (`ALTER ROLE … PASSWORD 'x'`, a user mapping's or server's options, a
 * dblink connection string) has every string literal replaced by `'***'`: which literal holds the
 * secret depends on the statement, and the rest of the text still says what was tried. A string
 * shaped like an API key is cut to its public id wherever it appears.
 */

/** SQL text kept per audit row, in characters (a statement's text is cut there). */
export const AUDIT_SQL_MAX_CHARS = 4096;

const MENTIONS_SECRET = /passw|secret|credential|token/i;
/** A key, or the start of one cut by the bound: everything after the public id goes. */
const API_KEY = /\brb_([0-9a-f]{12})_[A-Za-z0-9_-]*/g;

/**
 * `sql` as an audit row stores it (see the module comment). Cut first, so the work and the memory
 * a row costs are bounded whatever the statement's size: a literal the cut leaves open is
 * redacted to the end, and a key cut short loses what is left of its secret.
 */
export function auditSql(sql: string): string {
  let text = sql.length > AUDIT_SQL_MAX_CHARS ? sql.slice(0, AUDIT_SQL_MAX_CHARS - 1) + '…' : sql;
  if (MENTIONS_SECRET.test(text)) text = redactLiterals(text);
  return text.includes('rb_') ? text.replace(API_KEY, 'rb_$1_***') : text;
}

const WORD_CHAR = /[A-Za-z0-9_$]/;

/**
 * `sql` with each string literal ('…', E'…', $tag$…$tag$) replaced by '***'. Quoted identifiers
 * and comments are skipped over so that a quote inside them is not taken for a literal; a literal
 * left open (a cut or broken statement) is redacted to the end.
 */
export function redactLiterals(sql: string): string {
  const parts: string[] = [];
  let kept = 0; // start of the text not yet copied
  let i = 0;
  const literal = (start: number, end: number) => {
    parts.push(sql.slice(kept, start), "'***'");
    kept = end;
  };
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      i = close < 0 ? sql.length : close + 2;
    } else if (c === '"') {
      i = closing(sql, i + 1, '"', false);
    } else if (c === "'") {
      const escapes = (sql[i - 1] === 'e' || sql[i - 1] === 'E') && !WORD_CHAR.test(sql[i - 2] ?? ' ');
      const end = closing(sql, i + 1, "'", escapes);
      literal(i, end);
      i = end;
    } else if (c === '$' && !WORD_CHAR.test(sql[i - 1] ?? ' ')) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 64));
      if (!tag) {
        i++;
        continue;
      }
      const close = sql.indexOf(tag[0], i + tag[0].length);
      const end = close < 0 ? sql.length : close + tag[0].length;
      literal(i, end);
      i = end;
    } else {
      i++;
    }
  }
  parts.push(sql.slice(kept));
  return parts.join('');
}

/** Index just past the quote closing a quoted run that starts at `from` (doubled quotes are part of it). */
function closing(sql: string, from: number, quote: string, backslashEscapes: boolean): number {
  let i = from;
  while (i < sql.length) {
    const c = sql[i]!;
    if (backslashEscapes && c === '\\') i += 2;
    else if (c === quote && sql[i + 1] === quote) i += 2;
    else if (c === quote) return i + 1;
    else i++;
  }
  return sql.length;
}
