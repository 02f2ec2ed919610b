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
