// A small SQL tokenizer, only for finding boundaries the parser does not report (where a clause
// ends, where a PL/pgSQL assignment's target stops). It knows what can hide a `,` or `;`:
// quoted identifiers, string literals (E'', U&'', $tag$ $tag$), comments (nested /* */).

export type TokenKind = 'ident' | 'qident' | 'string' | 'number' | 'param' | 'op' | 'punct';

export interface Token {
  kind: TokenKind;
  /** UTF-16 indexes into the scanned string. */
  start: number;
  end: number;
  /** Identifier text: quoted identifiers unquoted (`""` → `"`), others as written. */
  text: string;
}

const opChars = new Set('+-*/<>=~!@#%^&|`?:');
const punct = new Set('(),;[].');

function isIdentStart(c: string): boolean {
  return /[A-Za-z_\u0080-\uffff]/.test(c);
}

function isIdentPart(c: string): boolean {
  return /[A-Za-z0-9_$\u0080-\uffff]/.test(c);
}

/** Tokens of `sql` between `from` and `to` (UTF-16 indexes), whitespace and comments skipped. */
export function scanTokens(sql: string, from = 0, to = sql.length): Token[] {
  const tokens: Token[] = [];
  let i = from;
  while (i < to) {
    const c = sql[i] as string;
    const next = sql[i + 1];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && next === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 || nl > to ? to : nl + 1;
    } else if (c === '/' && next === '*') {
      i = skipBlockComment(sql, i, to);
    } else if (c === '"') {
      const end = quotedEnd(sql, i, to, '"', false);
      tokens.push({ kind: 'qident', start: i, end, text: sql.slice(i + 1, end - 1).replaceAll('""', '"') });
      i = end;
    } else if (c === "'") {
      const end = quotedEnd(sql, i, to, "'", false);
      tokens.push({ kind: 'string', start: i, end, text: sql.slice(i, end) });
      i = end;
    } else if (c === '$' && next !== undefined && /[0-9]/.test(next)) {
      let end = i + 1;
      while (end < to && /[0-9]/.test(sql[end] as string)) end++;
      tokens.push({ kind: 'param', start: i, end, text: sql.slice(i, end) });
      i = end;
    } else if (c === '$') {
      const tag = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, Math.min(to, i + 200)));
      if (tag === null) {
        tokens.push({ kind: 'op', start: i, end: i + 1, text: '$' });
        i++;
      } else {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        const end = close < 0 || close + tag[0].length > to ? to : close + tag[0].length;
        tokens.push({ kind: 'string', start: i, end, text: sql.slice(i, end) });
        i = end;
      }
    } else if (isIdentStart(c)) {
      let end = i + 1;
      while (end < to && isIdentPart(sql[end] as string)) end++;
      const word = sql.slice(i, end);
      // E'…', B'…', X'…', N'…' and U&'…' / U&"…" glue a prefix to a literal or identifier.
      if (sql[end] === "'" && /^[EeBbXxNn]$/.test(word)) {
        const close = quotedEnd(sql, end, to, "'", word === 'E' || word === 'e');
        tokens.push({ kind: 'string', start: i, end: close, text: sql.slice(i, close) });
        i = close;
      } else if (/^[Uu]$/.test(word) && sql[end] === '&' && (sql[end + 1] === "'" || sql[end + 1] === '"')) {
        const quote = sql[end + 1] as string;
        const close = quotedEnd(sql, end + 1, to, quote, false);
        const body = sql.slice(end + 2, close - 1).replaceAll(quote + quote, quote);
        const kind = quote === '"' ? 'qident' : 'string';
        tokens.push({ kind, start: i, end: close, text: kind === 'qident' ? decodeUnicodeEscapes(body) : body });
        i = close;
      } else {
        tokens.push({ kind: 'ident', start: i, end, text: word });
        i = end;
      }
    } else if (/[0-9]/.test(c) || (c === '.' && next !== undefined && /[0-9]/.test(next))) {
      let end = i + 1;
      while (end < to && /[0-9A-Za-z_.]/.test(sql[end] as string)) end++;
      tokens.push({ kind: 'number', start: i, end, text: sql.slice(i, end) });
      i = end;
    } else if (c === ':' && next === '=') {
      tokens.push({ kind: 'op', start: i, end: i + 2, text: ':=' });
      i += 2;
    } else if (punct.has(c)) {
      tokens.push({ kind: 'punct', start: i, end: i + 1, text: c });
      i++;
    } else if (opChars.has(c)) {
      let end = i + 1;
      while (end < to && opChars.has(sql[end] as string) && !(sql[end] === '-' && sql[end + 1] === '-')) end++;
      tokens.push({ kind: 'op', start: i, end, text: sql.slice(i, end) });
      i = end;
    } else {
      tokens.push({ kind: 'punct', start: i, end: i + 1, text: c });
      i++;
    }
  }
  return tokens;
}

function skipBlockComment(sql: string, start: number, to: number): number {
  let depth = 0;
  let i = start;
  while (i < to) {
    if (sql[i] === '/' && sql[i + 1] === '*') {
      depth++;
      i += 2;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else {
      i++;
    }
  }
  return to;
}

function quotedEnd(sql: string, open: number, to: number, quote: string, backslash: boolean): number {
  let i = open + 1;
  while (i < to) {
    const c = sql[i];
    if (backslash && c === '\\') {
      i += 2;
    } else if (c === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else {
      i++;
    }
  }
  return to;
}

/** Decodes the default escapes of a U&"…" identifier: \XXXX, \+XXXXXX and \\. */
function decodeUnicodeEscapes(text: string): string {
  return text.replace(/\\(\\|\+[0-9A-Fa-f]{6}|[0-9A-Fa-f]{4})/g, (_, code: string) =>
    code === '\\' ? '\\' : String.fromCodePoint(parseInt(code.replace('+', ''), 16)),
  );
}
