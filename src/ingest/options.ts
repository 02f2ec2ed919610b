/**
 * The options of an upload from its form fields (and query string), validated: what a client
 * may send to `POST /import/` and `/import/preview`, turned into the library's types.
 */
import { PgError, SqlState } from '../shared/errors.js';
import { assertTableName, tableNameFromFile } from './names.js';
import { parseOverrides } from './overrides.js';
import { FORMATS, HEADER_MODES, MODES, type Format, type HeaderMode, type ImportMode, type ParseOptions } from './types.js';

/** Form fields by name; a field sent several times keeps every value. */
export type Fields = Readonly<Record<string, readonly string[]>>;

export interface UploadOptions extends ParseOptions {
  repo?: string | undefined;
  table: string;
  mode: ImportMode;
  /** Explicit `async=true|false`, if sent. */
  async?: boolean | undefined;
}

const KNOWN = new Set(['repo', 'table_name', 'mode', 'format', 'header', 'delimiter', 'null_values', 'encoding', 'async', 'columns']);

function invalid(message: string, hint?: string): PgError {
  return new PgError(SqlState.InvalidParameterValue, message, { hint });
}

function one(fields: Fields, name: string): string | undefined {
  const values = fields[name];
  if (!values || values.length === 0) return undefined;
  if (values.length > 1) throw invalid(`the field "${name}" was sent ${values.length} times`);
  return values[0];
}

function choice<T extends string>(fields: Fields, name: string, allowed: readonly T[], fallback: T | undefined): T | undefined {
  const v = one(fields, name);
  if (v === undefined || v === '' || (v === 'auto' && !allowed.includes('auto' as T))) return fallback;
  if (!allowed.includes(v as T)) throw invalid(`invalid ${name} "${v}"`, `one of: ${allowed.join(', ')}`);
  return v as T;
}

function delimiterOf(v: string | undefined): string | undefined {
  if (v === undefined || v === '' || v === 'auto') return undefined;
  const named: Record<string, string> = { tab: '\t', '\\t': '\t', comma: ',', semicolon: ';', pipe: '|' };
  const d = named[v] ?? v;
  if ([...d].length !== 1 || d === '"' || d === '\n' || d === '\r') {
    throw invalid(`invalid delimiter "${v}"`, 'one character other than a quote or a line break (or tab, comma, semicolon, pipe)');
  }
  return d;
}

function nullValuesOf(values: readonly string[] | undefined): string[] {
  if (!values || values.length === 0) return [''];
  if (values.length === 1 && values[0]!.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(values[0]!);
    } catch {
      throw invalid('null_values is not a JSON array of strings');
    }
    if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) throw invalid('null_values must be a JSON array of strings');
    return parsed as string[];
  }
  return [...values];
}

/** Validates the fields of an upload of `fileName` (a preview names no table: `forTable` false). */
export function uploadOptions(fields: Fields, fileName: string | undefined, forTable = true): UploadOptions {
  for (const name of Object.keys(fields)) {
    if (!KNOWN.has(name)) throw invalid(`unknown field "${name}"`, `fields: file, ${[...KNOWN].join(', ')}`);
  }
  const table = one(fields, 'table_name') ?? tableNameFromFile(fileName ?? '');
  if (forTable && table === '') throw invalid('no table name: send table_name (the file has no name to take it from)');
  if (forTable) assertTableName(table);
  const asyncField = one(fields, 'async');
  if (asyncField !== undefined && asyncField !== 'true' && asyncField !== 'false') throw invalid(`invalid async "${asyncField}"`, 'true or false');
  const columns = one(fields, 'columns');
  return {
    repo: one(fields, 'repo'),
    table,
    mode: choice<ImportMode>(fields, 'mode', MODES, 'create')!,
    format: choice<Format>(fields, 'format', FORMATS, undefined),
    header: choice<HeaderMode>(fields, 'header', HEADER_MODES, 'auto')!,
    delimiter: delimiterOf(one(fields, 'delimiter')),
    nullValues: nullValuesOf(fields.null_values),
    encoding: one(fields, 'encoding') || 'utf-8',
    fileName,
    async: asyncField === undefined ? undefined : asyncField === 'true',
    columns: columns === undefined || columns === '' ? undefined : parseOverrides(columns),
  };
}
