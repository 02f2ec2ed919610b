/**
 * The rules the server applies to the names of an upload, checked before sending so the person
 * hears about a bad name at once: 1–63 bytes of UTF-8 (Postgres would cut a longer identifier),
 * no control characters, no blank; table names not starting with `_repobase_`.
 */

export const MAX_IDENTIFIER_BYTES = 63;
const RESERVED_PREFIX = '_repobase_';
const CONTROL = /[\u0000-\u001f\u007f]/;

const bytes = (s: string) => new TextEncoder().encode(s).length;

/** The default table name, as the server takes it: the file name without its extension. */
export function tableNameFromFile(fileName: string): string {
  const base = fileName.replace(/^.*[\\/]/, '');
  const dot = base.lastIndexOf('.');
  let name = (dot > 0 ? base.slice(0, dot) : base).trim();
  // Cut to 63 bytes without splitting a character, so the default is always valid.
  while (bytes(name) > MAX_IDENTIFIER_BYTES) name = [...name].slice(0, -1).join('').trimEnd();
  return name;
}

/** Why `name` cannot name a table, or null. */
export function tableNameProblem(name: string): string | null {
  if (name.trim() === '') return 'Enter a table name.';
  if (name !== name.trim()) return 'The table name cannot start or end with a space.';
  if (CONTROL.test(name)) return 'The table name cannot hold control characters (such as line breaks or tabs).';
  if (bytes(name) > MAX_IDENTIFIER_BYTES) return `The table name is longer than ${MAX_IDENTIFIER_BYTES} bytes.`;
  if (name.toLowerCase().startsWith(RESERVED_PREFIX)) return `Table names cannot start with ${RESERVED_PREFIX}.`;
  return null;
}

/** Why the column names cannot be used, per column (null where the name is fine). */
export function columnNameProblems(names: readonly string[]): (string | null)[] {
  const seen = new Map<string, number>();
  return names.map((name, i) => {
    if (name.trim() === '') return `Enter a name for column ${i + 1}.`;
    if (CONTROL.test(name)) return `The name of column ${i + 1} cannot hold control characters.`;
    if (bytes(name) > MAX_IDENTIFIER_BYTES) return `The name of column ${i + 1} is longer than ${MAX_IDENTIFIER_BYTES} bytes.`;
    const first = seen.get(name);
    if (first !== undefined) return `Column ${i + 1} has the same name as column ${first + 1}.`;
    seen.set(name, i);
    return null;
  });
}

/** Bytes for people: 980 B, 12.3 KB, 4.5 MB, 1.2 GB. */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = -1;
  do {
    v /= 1000;
    u++;
  } while (v >= 1000 && u < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}
