/**
 * The one way the console builds SQL text from names: every identifier through quoteIdent.
 * Names are data (a table may be called `a"b` or `x; DROP TABLE y`), never pasted.
 */

/** A Postgres identifier in double quotes, inner `"` doubled: `a"b` → `"a""b"`. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `"owner/repo"."table"`: a table of a repo, whose schema is the repo's full name. */
export function qualifiedTable(repoName: string, table: string): string {
  return `${quoteIdent(repoName)}.${quoteIdent(table)}`;
}

/**
 * A Postgres string literal: `'` doubled. Text holding a backslash is written as an escape
 * string (`E'…'`, backslashes doubled), which reads the same whatever
 * `standard_conforming_strings` says — as libpq's PQescapeLiteral does.
 */
export function quoteLiteral(text: string): string {
  const quoted = `'${text.replaceAll("'", "''")}'`;
  return text.includes('\\') ? `E${quoted.replaceAll('\\', '\\\\')}` : quoted;
}

/** Text matched literally inside a LIKE/ILIKE pattern: `\`, `%` and `_` escaped with `\` (LIKE's default escape). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
