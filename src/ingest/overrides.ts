/**
 * The upload wizard's choices: for each column of the file, a new name and/or a SQL type in
 * place of what inference found. The `columns` field is checked as soon as it arrives, before
 * any byte of the file is read (JSON shape, types, names); what needs the file — its number of
 * columns, the names of the columns not renamed — is checked once those are known (resolveColumns).
 */
import { PgError, SqlState } from '../shared/errors.js';
import { writtenAs } from './convert.js';
import { COLUMN_NAME_RULE, isColumnName } from './names.js';
import { MAX_COLUMNS } from './staging.js';
import type { ColumnOverride, InferredColumn, SqlType } from './types.js';
import { GROUPED, LAYOUT_BITS, type Layout } from './written.js';

/** The layouts a `written` entry may name, as the API spells them. */
export const WRITTEN_LAYOUTS = Object.keys(LAYOUT_BITS) as Layout[];
const LAYOUT_BY_NAME = new Map(WRITTEN_LAYOUTS.map((l) => [l.toUpperCase(), l]));

/** The types an override may choose, as the API spells them (the hint of every refusal). */
export const OVERRIDE_TYPES = [
  'TEXT',
  'BIGINT',
  'INTEGER',
  'NUMERIC',
  'NUMERIC(p,s)',
  'DOUBLE PRECISION',
  'BOOLEAN',
  'DATE',
  'TIMESTAMP',
  'TIMESTAMP WITH TIME ZONE',
  'JSONB',
  'UUID',
] as const;

/** Upper-cased spelling → the type as `format_type` prints it (what an append compares with). */
const BY_NAME: Readonly<Record<string, SqlType>> = {
  TEXT: 'text',
  BIGINT: 'bigint',
  INTEGER: 'integer',
  NUMERIC: 'numeric',
  'DOUBLE PRECISION': 'double precision',
  BOOLEAN: 'boolean',
  DATE: 'date',
  TIMESTAMP: 'timestamp without time zone',
  // The spelling the preview and the job report, so that a wizard can send a type back unchanged.
  'TIMESTAMP WITHOUT TIME ZONE': 'timestamp without time zone',
  'TIMESTAMP WITH TIME ZONE': 'timestamp with time zone',
  JSONB: 'jsonb',
  UUID: 'uuid',
};

const NUMERIC_TYPMOD = /^NUMERIC\s*\(\s*(\d{1,4})\s*(?:,\s*(-?\d{1,4})\s*)?\)$/;
/** Postgres' bounds of numeric's precision and scale (a negative scale rounds left of the point). */
const MAX_PRECISION = 1000;

const SHAPE = 'send columns as a JSON array with one entry per column of the file, e.g. [{"name": "zip", "type": "TEXT"}, {}]';

function invalid(message: string, hint?: string): PgError {
  return new PgError(SqlState.InvalidParameterValue, message, { hint });
}

/** The canonical SQL type of a spelling like `numeric(10, 2)` or `Timestamp`; undefined when not allowed. */
export function sqlTypeOf(spelling: string): SqlType | undefined {
  const upper = spelling.trim().replace(/\s+/g, ' ').toUpperCase();
  const named = BY_NAME[upper];
  if (named) return named;
  const m = NUMERIC_TYPMOD.exec(upper);
  if (!m) return undefined;
  const precision = Number(m[1]);
  const scale = Number(m[2] ?? 0);
  if (precision < 1 || precision > MAX_PRECISION || Math.abs(scale) > MAX_PRECISION) return undefined;
  return `numeric(${precision},${scale})`;
}

/** How an error names entry `i`: its position (1-based, like `column_<n>`), and its new name if any. */
const columnLabel = (i: number, name: string | undefined) => `column ${i + 1}${name === undefined ? '' : ` ("${name}")`}`;

function overrideOf(entry: unknown, i: number): ColumnOverride {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw invalid(`columns[${i}] is not an object`, SHAPE);
  const fields = entry as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (key !== 'name' && key !== 'type' && key !== 'written') throw invalid(`columns[${i}] has an unknown key "${key}"`, 'an entry may have "name", "type" and "written", all optional');
  }
  // null is "keep", like a missing key: a form that clears a box may send either.
  const name = fields.name ?? undefined;
  const type = fields.type ?? undefined;
  const written = fields.written ?? undefined;
  if (name !== undefined && typeof name !== 'string') throw invalid(`columns[${i}].name is not a string`, SHAPE);
  if (type !== undefined && typeof type !== 'string') throw invalid(`columns[${i}].type is not a string`, SHAPE);
  if (written !== undefined && typeof written !== 'string') throw invalid(`columns[${i}].written is not a string`, SHAPE);
  const sqlType = type === undefined ? undefined : sqlTypeOf(type);
  if (type !== undefined && sqlType === undefined) {
    throw invalid(`unknown type "${type}" for ${columnLabel(i, name)}`, `the types a column may be given: ${OVERRIDE_TYPES.join(', ')}`);
  }
  const layout = written === undefined ? undefined : LAYOUT_BY_NAME.get(written.trim().replace(/\s+/g, ' ').toUpperCase());
  if (written !== undefined && layout === undefined) {
    throw invalid(`unknown layout "${written}" for ${columnLabel(i, name)}`, `the layouts values may be written in: ${WRITTEN_LAYOUTS.join(', ')}`);
  }
  if (layout !== undefined && sqlType !== undefined) assertReads(sqlType, layout, i, name);
  return { name, type: sqlType, written: layout };
}

/** Throws unless a column of `type` can read values written in `layout` (a date layout: a date or timestamp type; GROUPED: a number type). */
function assertReads(type: SqlType, layout: Layout, i: number, name: string | undefined): void {
  if (writtenAs(type, { layout }) !== undefined) return;
  throw invalid(`${columnLabel(i, name)} is ${type.toUpperCase()}: its values cannot be read as written ${layout}`, `values written ${layout} need a ${layout === GROUPED ? 'number type (BIGINT, INTEGER, NUMERIC, DOUBLE PRECISION)' : 'DATE, TIMESTAMP or TIMESTAMP WITH TIME ZONE'}`);
}

/** Names given to more than one column, each once, in order of their second use. */
function repeated(names: readonly string[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const n of names) (seen.has(n) ? twice : seen).add(n);
  return [...twice];
}

const quoted = (names: readonly string[]) => names.map((n) => JSON.stringify(n)).join(', ');

/** Parses and checks the `columns` form field (everything that does not need the file). */
export function parseOverrides(text: string): ColumnOverride[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid('columns is not valid JSON', SHAPE);
  }
  if (!Array.isArray(parsed)) throw invalid('columns is not a JSON array', SHAPE);
  if (parsed.length === 0 || parsed.length > MAX_COLUMNS) throw invalid(`columns has ${parsed.length} entries; a table has 1 to ${MAX_COLUMNS} columns`, SHAPE);
  const overrides = parsed.map(overrideOf);
  const names = overrides.flatMap((o) => (o.name === undefined ? [] : [o.name]));
  const bad = names.filter((n) => !isColumnName(n));
  if (bad.length) throw new PgError(SqlState.InvalidName, `invalid column names in columns: ${quoted(bad)}`, { hint: COLUMN_NAME_RULE });
  const twice = repeated(names);
  if (twice.length) throw invalid(`columns gives more than one column the name ${quoted(twice)}`, 'every column needs a name of its own');
  return overrides;
}

/** Whether any entry renames its column (an append then matches every column by name). */
export function renames(overrides: readonly ColumnOverride[] | undefined): boolean {
  return overrides?.some((o) => o.name !== undefined) ?? false;
}

/** Throws unless there is one override per column of the file (`names`: the file's column names). */
export function assertWidth(overrides: readonly ColumnOverride[] | undefined, names: readonly string[]): void {
  if (overrides === undefined || overrides.length === names.length) return;
  const shown = names.length > 20 ? `${quoted(names.slice(0, 20))}, …` : quoted(names);
  throw invalid(`columns has ${overrides.length} entries; the file has ${names.length} columns`, `one entry per column of the file, in order: ${shown}`);
}

/**
 * The file's columns (`inferred`, named by the header or `column_<n>`) with the overrides
 * applied. A type of the same family keeps how inference found the values written (a numeric
 * type, thousands separators; a date or timestamp type, the date layout): every value fits it.
 * A layout chosen (`written`) replaces it: the loaders check that every value fits it
 * (LayoutCheck), and read the values by it when the column's type — the one chosen, else the
 * inferred one, on append the table's — is of its family (a type chosen with it must be).
 * Otherwise values are read as Postgres reads them (dates month first).
 */
export function resolveColumns(inferred: readonly InferredColumn[], overrides: readonly ColumnOverride[] | undefined): InferredColumn[] {
  if (overrides === undefined) return [...inferred];
  assertWidth(overrides, inferred.map((c) => c.name));
  const columns = inferred.map((c, i) => {
    const o = overrides[i]!;
    const type = o.type ?? c.type;
    if (o.written === undefined) return { name: o.name ?? c.name, type, written: writtenAs(type, c.written), ambiguous: type === 'text' ? c.ambiguous : undefined };
    return { name: o.name ?? c.name, type, written: o.written === c.written?.layout ? c.written : { layout: o.written } };
  });
  const twice = repeated(columns.map((c) => c.name));
  if (twice.length) {
    throw invalid(`more than one column would be named ${quoted(twice)}`, 'a new name in columns is already the name of another column of the file: rename that one too');
  }
  return columns;
}
