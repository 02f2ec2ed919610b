/**
 * Cell values: what the API sends for each SQL type, its Postgres text form (what a person sees
 * and edits, and what a literal holds), and how it is written in SQL. Values are always sent back
 * as string literals of that text form (`'12.50'`, `'{"a",NULL}'`, `'{"k": 1}'`): an untyped
 * literal takes the type of the column it is assigned to or compared with, so no type name is
 * ever pasted into a statement.
 */
import { quoteLiteral } from '../lib/sql.ts';
import { JsonNumber, JsonObject, stringifyExactJson, type JsonValue } from './exact-json.ts';

export type ValueKind = 'number' | 'bool' | 'json' | 'array' | 'text';

const NUMBER_TYPE = /^(?:SMALLINT|INTEGER|BIGINT|REAL|DOUBLE PRECISION|NUMERIC|DECIMAL|OID)\b/;

/** How values of an SQL type (as the API spells it) are sent and shown. */
export function kindOfType(type: string): ValueKind {
  const t = type.toUpperCase();
  if (t.endsWith('[]')) return 'array';
  if (t === 'JSON' || t === 'JSONB') return 'json';
  if (t === 'BOOLEAN') return 'bool';
  if (NUMBER_TYPE.test(t)) return 'number';
  return 'text';
}

/** An array element as Postgres writes it: quoted when it would not read back as itself. */
function arrayElement(text: string): string {
  if (text === '' || /[{}",\\\s]/.test(text) || text.toUpperCase() === 'NULL') return `"${text.replace(/["\\]/g, (c) => `\\${c}`)}"`;
  return text;
}

function scalarText(value: Exclude<JsonValue, null | JsonValue[]>): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (value instanceof JsonNumber) return value.text;
  return stringifyExactJson(value);
}

/** `{1,2,NULL}`, `{{"a b",c},{d,e}}`: an array's Postgres text form. */
export function arrayText(values: JsonValue[]): string {
  const parts = values.map((v) => {
    if (v === null) return 'NULL';
    if (Array.isArray(v)) return arrayText(v);
    return arrayElement(scalarText(v));
  });
  return `{${parts.join(',')}}`;
}

/**
 * The Postgres text form of a value, or null for SQL NULL. (A json/jsonb `null` document arrives
 * as JSON null too: the API cannot tell it from SQL NULL, so it shows as NULL.)
 */
export function textOf(value: JsonValue | undefined, kind: ValueKind): string | null {
  if (value === null || value === undefined) return null;
  if (kind === 'json') return stringifyExactJson(value);
  if (Array.isArray(value)) return kind === 'array' ? arrayText(value) : stringifyExactJson(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof JsonObject) return stringifyExactJson(value);
  return scalarText(value);
}

/** The SQL of a value: NULL, or its text form as a string literal. */
export function literalOf(value: JsonValue | undefined, kind: ValueKind): string {
  const text = textOf(value, kind);
  return text === null ? 'NULL' : quoteLiteral(text);
}

/** The SQL of a person's input: NULL, or the text as a string literal (never pasted). */
export function literalOfText(text: string | null): string {
  return text === null ? 'NULL' : quoteLiteral(text);
}
