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
const API_KEY = /\brb_([0-9a-f]{12})_[A-Za-z0-9_-]{43}/g;

/** `sql` as an audit row stores it (see the module comment). */
export function auditSql(sql: string): string {
  let text = sql.length > 4 * AUDIT_SQL_MAX_CHARS ? sql.slice(0, 4 * AUDIT_SQL_MAX_CHARS) : sql;
  if (MENTIONS_SECRET.test(text)) text = redactLiterals(text);
  text = text.replace(API_KEY, 'rb_$1_***');
  return text.length > AUDIT_SQL_MAX_CHARS ? text.slice(0, AUDIT_SQL_MAX_CHARS - 1) + '…' : text;
}

/**
 * `sql` with each string literal ('…', E'…', $tag$…$tag$) replaced by '***'. Quoted identifiers
 * and comments are skipped over so that a quote inside them is not taken for a literal; a literal
 * left open (a cut or broken statement) is redacted to the end.
 */
export function redactLiterals(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      const end = nl < 0 ? sql.length : nl;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      const end = close < 0 ? sql.length : close + 2;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '"') {
      const end = closing(sql, i + 1, '"', false);
      out += sql.slice(i, end);
      i = end;
    } else if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && !/[A-Za-z0-9_$]/.test(sql[i - 2] ?? ' ');
      i = closing(sql, i + 1, "'", escapes);
      out += "'***'";
    } else if (c === '$' && !/[A-Za-z0-9_$]/.test(sql[i - 1] ?? ' ')) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 64));
      if (!tag) {
        out += c;
        i++;
        continue;
      }
      const close = sql.indexOf(tag[0], i + tag[0].length);
      i = close < 0 ? sql.length : close + tag[0].length;
      out += "'***'";
    } else {
      out += c;
      i++;
    }
  }
  return out;
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
