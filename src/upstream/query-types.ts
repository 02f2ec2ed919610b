/**
 * What the REST answer needs to know about a result column's type: its SQL name as Postgres
 * formats it (`format_type(oid, typmod)`, upper-cased) and how to encode its text values in JSON.
 * Looked up on the admin pool, in one round trip per batch of unknown types.
 */
import type pg from 'pg';
import { fromDriverError } from './pg-error.js';

/** How the text form of a value becomes JSON (DESIGN.md §3). */
export type ValueEncoding =
  | { kind: 'number' }
  | { kind: 'bool' }
  | { kind: 'json' }
  | { kind: 'text' }
  | { kind: 'array'; delimiter: string; element: ValueEncoding };

export interface ColumnType {
  /** `BIGINT`, `NUMERIC(10,2)`, `TEXT[]`, … */
  name: string;
  encoding: ValueEncoding;
}

/** Objects below this oid are built into Postgres: their types never change, so they are cached for good. */
const FIRST_NORMAL_OID = 16384;

const NUMBER_TYPES = new Set([20, 21, 23, 700, 701, 1700]); // int8 int2 int4 float4 float8 numeric
const JSON_TYPES = new Set([114, 3802]); // json jsonb
const BOOL_TYPE = 16;

interface TypeRow {
  oid: number;
  category: string;
  elem: number;
  delim: string;
  base: number;
}

const TYPE_SQL = `SELECT oid::int AS oid, typcategory AS category, typelem::int AS elem, typdelim AS delim, typbasetype::int AS base
  FROM pg_catalog.pg_type WHERE oid = ANY($1::oid[])`;
const NAME_SQL = `SELECT o::int AS oid, m AS typmod, pg_catalog.format_type(o, m) AS name FROM unnest($1::oid[], $2::int[]) AS u(o, m)`;

/** Type names and encodings of result columns; built-in types cached for the process's life. */
export class TypeCatalog {
  /** Built-in types only: see FIRST_NORMAL_OID. */
  private readonly rows = new Map<number, TypeRow>();
  private readonly names = new Map<string, string>();
  /** Column types of built-in oids, by oid then typmod (no key string per lookup), shared by every answer. */
  private readonly builtIn = new Map<number, Map<number, ColumnType>>();

  constructor(private readonly admin: Pick<pg.Pool, 'query'>) {}

  /** The type of each column when all are built-in types seen before (the common case: no await), else undefined. */
  known(columns: readonly { oid: number; typmod: number }[]): ColumnType[] | undefined {
    const types: ColumnType[] = [];
    for (const c of columns) {
      const type = this.builtIn.get(c.oid)?.get(c.typmod);
      if (type === undefined) return undefined;
      types.push(type);
    }
    return types;
  }

  /** The type of each column, in order. */
  async describe(columns: readonly { oid: number; typmod: number }[]): Promise<ColumnType[]> {
    const rows = new Map<number, TypeRow>();
    const names = new Map<string, string>();
    const wantedNames = columns.filter((c) => !this.names.has(nameKey(c.oid, c.typmod)));
    try {
      if (wantedNames.length) {
        const res = await this.admin.query<{ oid: number; typmod: number; name: string }>(NAME_SQL, [
          wantedNames.map((c) => c.oid),
          wantedNames.map((c) => c.typmod),
        ]);
        for (const r of res.rows) names.set(nameKey(r.oid, r.typmod), upperUnquoted(r.name));
      }
      // Arrays and domains lead to further types: follow them until everything is known.
      let wanted = [...new Set(columns.map((c) => c.oid))].filter((oid) => !this.rows.has(oid));
      while (wanted.length) {
        const res = await this.admin.query<TypeRow>(TYPE_SQL, [wanted]);
        for (const r of res.rows) rows.set(r.oid, r);
        wanted = res.rows.flatMap((r) => [r.elem, r.base]).filter((oid) => oid !== 0 && !this.rows.has(oid) && !rows.has(oid));
      }
    } catch (err: unknown) {
      throw fromDriverError(err) ?? err;
    }
    // User types (enums, domains…) can be dropped and their oid reused: never cached.
    for (const [key, name] of names) if (Number(key.split(':')[0]) < FIRST_NORMAL_OID) this.names.set(key, name);
    for (const [oid, row] of rows) if (oid < FIRST_NORMAL_OID) this.rows.set(oid, row);
    const typeRow = (oid: number) => this.rows.get(oid) ?? rows.get(oid);
    return columns.map((c) => {
      const key = nameKey(c.oid, c.typmod);
      const type: ColumnType = { name: this.names.get(key) ?? names.get(key) ?? 'UNKNOWN', encoding: encodingOf(c.oid, typeRow) };
      if (c.oid < FIRST_NORMAL_OID && this.names.has(key)) {
        let byTypmod = this.builtIn.get(c.oid);
        if (byTypmod === undefined) this.builtIn.set(c.oid, (byTypmod = new Map()));
        byTypmod.set(c.typmod, type);
      }
      return type;
    });
  }
}

function encodingOf(oid: number, typeRow: (oid: number) => TypeRow | undefined, depth = 0): ValueEncoding {
  if (NUMBER_TYPES.has(oid)) return { kind: 'number' };
  if (JSON_TYPES.has(oid)) return { kind: 'json' };
  if (oid === BOOL_TYPE) return { kind: 'bool' };
  const row = typeRow(oid);
  if (!row || depth > 8) return { kind: 'text' };
  if (row.base !== 0) return encodingOf(row.base, typeRow, depth + 1); // a domain reads like its base type
  if (row.category === 'A' && row.elem !== 0) {
    return { kind: 'array', delimiter: row.delim, element: encodingOf(row.elem, typeRow, depth + 1) };
  }
  return { kind: 'text' };
}

/**
 * Upper-cases a formatted type name outside double quotes: `numeric(10,2)` → `NUMERIC(10,2)`,
 * while a quoted user schema keeps its spelling (`"alice/Sales".MOOD` still names the same type).
 */
export function upperUnquoted(name: string): string {
  return name.replace(/("(?:[^"]|"")*")|[^"]+/g, (part, quoted: string | undefined) => (quoted ? part : part.toUpperCase()));
}

function nameKey(oid: number, typmod: number): string {
  return `${oid}:${typmod}`;
}
