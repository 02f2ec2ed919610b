/**
 * Table and column names of an upload. Names are kept as written (trimmed), since repobase
 * quotes every identifier; what Postgres would silently change is refused or made explicit:
 * identifiers longer than 63 bytes would be truncated, so they are refused (tables) or cut
 * here before duplicates are made unique (columns).
 */
import { PgError, SqlState } from '../shared/errors.js';

/** Postgres keeps at most NAMEDATALEN-1 bytes of an identifier. */
export const MAX_IDENTIFIER_BYTES = 63;

/** Prefix of the service's own work tables; user tables may not start with it. */
export const RESERVED_PREFIX = '_repobase_';

export const TABLE_NAME_RULE = `a table name is 1–${MAX_IDENTIFIER_BYTES} bytes of UTF-8 without control characters, not blank, not starting with "${RESERVED_PREFIX}"`;

const CONTROL = /[\u0000-\u001f\u007f]/;

/** Throws 42602 unless `name` may name an uploaded table. */
export function assertTableName(name: string): void {
  const bad =
    name.trim() === '' ||
    name !== name.trim() ||
    CONTROL.test(name) ||
    Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES ||
    name.toLowerCase().startsWith(RESERVED_PREFIX);
  if (bad) throw new PgError(SqlState.InvalidName, `invalid table name "${name}"`, { hint: TABLE_NAME_RULE });
}

/** The default table name: the file name without directories and extension. */
export function tableNameFromFile(fileName: string): string {
  const base = fileName.replace(/^.*[\\/]/, '');
  const dot = base.lastIndexOf('.');
  return (dot > 0 ? base.slice(0, dot) : base).trim();
}

/** Cuts `name` to at most 63 UTF-8 bytes without splitting a character. */
export function cutIdentifier(name: string): string {
  if (Buffer.byteLength(name, 'utf8') <= MAX_IDENTIFIER_BYTES) return name;
  let out = '';
  for (const ch of name) {
    if (Buffer.byteLength(out + ch, 'utf8') > MAX_IDENTIFIER_BYTES) break;
    out += ch;
  }
  return out;
}

/**
 * Column names from header cells: trimmed and kept verbatim, blanks become `column_<n>`
 * (1-based position), control characters become spaces, and repeats get `_2`, `_3`… in order.
 */
export function columnNames(cells: readonly (string | null)[], width: number = cells.length): string[] {
  const used = new Set<string>();
  const names: string[] = [];
  for (let i = 0; i < width; i++) {
    const raw = (cells[i] ?? '').replace(/[\u0000-\u001f\u007f]/g, ' ').trim();
    const base = cutIdentifier(raw === '' ? `column_${i + 1}` : raw);
    let name = base;
    for (let n = 2; used.has(name); n++) {
      const suffix = `_${n}`;
      // Cut the base, not the suffix, when the pair would pass 63 bytes.
      let stem = base;
      while (Buffer.byteLength(stem + suffix, 'utf8') > MAX_IDENTIFIER_BYTES) stem = [...stem].slice(0, -1).join('');
      name = stem + suffix;
    }
    used.add(name);
    names.push(name);
  }
  return names;
}

/** Postgres' system columns: no table may have a column of these names. */
const SYSTEM_COLUMNS = ['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid'];

export const COLUMN_NAME_RULE = `a column name is 1–${MAX_IDENTIFIER_BYTES} bytes of UTF-8 without control characters, not blank, without spaces at either end, and not a system column (${SYSTEM_COLUMNS.join(', ')})`;

/**
 * Whether the caller may name a column `name`. Names the caller chooses are refused rather than
 * cleaned (as header cells are by columnNames): they were typed on purpose, so a silent change
 * would surprise.
 */
export function isColumnName(name: string): boolean {
  return (
    name.trim() !== '' &&
    name === name.trim() &&
    !CONTROL.test(name) &&
    Buffer.byteLength(name, 'utf8') <= MAX_IDENTIFIER_BYTES &&
    !SYSTEM_COLUMNS.includes(name)
  );
}
