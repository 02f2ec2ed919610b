// Identifier rules as Postgres applies them to names given in strings (search_path values,
// 'x.y'::regclass, nextval('s')), and the service's repo naming.

/** Postgres truncates identifiers to NAMEDATALEN - 1 bytes. */
const maxIdentifierBytes = 63;

export const REPO_NAME_RULE = 'a repo name is 1–100 characters: letters, digits, _, - and .';
const repoPattern = /^[A-Za-z0-9_.-]{1,100}$/;

/** Why `repo` (the part after `<user>/`) is not a valid repo name, or undefined. */
export function repoNameProblem(repo: string): string | undefined {
  if (!repoPattern.test(repo) || repo === '.' || repo === '..') return REPO_NAME_RULE;
  return undefined;
}

/** `bob/data` → {owner, repo}; undefined for a schema that is not a repo (no `/`). */
export function splitRepo(schema: string): { owner: string; repo: string } | undefined {
  const slash = schema.indexOf('/');
  if (slash < 0) return undefined;
  return { owner: schema.slice(0, slash), repo: schema.slice(slash + 1) };
}

/** pg_temp is the session's own temporary schema; pg_temp_N is how it appears in catalogs. */
export function isTempSchema(schema: string): boolean {
  return /^pg_temp(_\d+)?$/.test(schema);
}

export function isSystemSchema(schema: string): boolean {
  return schema === 'pg_catalog' || schema === 'information_schema';
}

/** Always-quoted identifier, `""` doubled: safe for any name. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Cuts a name to 63 UTF-8 bytes without splitting a character, as Postgres does. */
export function truncateIdentifier(name: string): string {
  if (name.length * 3 <= maxIdentifierBytes || Buffer.byteLength(name) <= maxIdentifierBytes) return name;
  let bytes = 0;
  let out = '';
  for (const ch of name) {
    bytes += Buffer.byteLength(ch);
    if (bytes > maxIdentifierBytes) break;
    out += ch;
  }
  return out;
}

const isSpace = (c: string | undefined): boolean => c !== undefined && /[ \t\n\r\f\v]/.test(c);

/**
 * Postgres' SplitIdentifierString: `a, "B c"` → ['a', 'B c']. Unquoted names are folded to
 * lower case (ASCII only, like downcase_identifier), all are truncated. With `lenient`, a name
 * also stops at `(` or `[` and whatever follows the names is ignored (function signatures, type
 * modifiers). Undefined when the text is not a valid list.
 */
export function splitIdentifiers(text: string, separator: string, lenient = false): string[] | undefined {
  const out: string[] = [];
  let i = 0;
  while (isSpace(text[i])) i++;
  if (i >= text.length) return out;
  for (;;) {
    let name: string;
    if (text[i] === '"') {
      let end = i + 1;
      name = '';
      for (;;) {
        const close = text.indexOf('"', end);
        if (close < 0) return undefined;
        name += text.slice(end, close);
        if (text[close + 1] !== '"') {
          i = close + 1;
          break;
        }
        name += '"';
        end = close + 2;
      }
    } else {
      const start = i;
      while (i < text.length && text[i] !== separator && !isSpace(text[i]) && !(lenient && (text[i] === '(' || text[i] === '['))) i++;
      if (i === start) return lenient && out.length > 0 ? out : undefined;
      name = text.slice(start, i).replace(/[A-Z]+/g, (s) => s.toLowerCase());
    }
    out.push(truncateIdentifier(name));
    while (isSpace(text[i])) i++;
    if (text[i] === separator) {
      i++;
      while (isSpace(text[i])) i++;
      continue;
    }
    if (i >= text.length || lenient) return out;
    return undefined;
  }
}
