/**
 * Catalog reads the REST API answers from the admin pool: the tables of a repo with their
 * columns, and whether a repo schema still holds anything. The callers check first that the
 * principal may read the repo — these functions see every schema.
 */
import type pg from 'pg';
import { fromDriverError } from './pg-error.js';
import { upperUnquoted } from './query-types.js';

export interface TableInfo {
  name: string;
  columns: { name: string; type: string }[];
}

/** Tables, views, materialized views and foreign tables of one schema, columns in order. */
const TABLES_SQL = `
SELECT c.relname AS table, a.attname AS column, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
 ORDER BY c.relname, a.attnum`;

/** Anything recorded as living in the schema (tables, types, functions…): what DROP SCHEMA without CASCADE refuses. */
const HAS_OBJECTS_SQL = `
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_namespace n ON n.oid = d.refobjid
                WHERE d.refclassid = 'pg_catalog.pg_namespace'::regclass AND n.nspname = $1) AS has`;

async function run<R extends pg.QueryResultRow>(db: Pick<pg.Pool, 'query'>, sql: string, values: unknown[]): Promise<R[]> {
  try {
    return (await db.query<R>(sql, values)).rows;
  } catch (err: unknown) {
    throw fromDriverError(err) ?? err;
  }
}

/** The tables of `schema` with their columns (types as `format_type` prints them, upper-cased). */
export async function listTables(db: Pick<pg.Pool, 'query'>, schema: string): Promise<TableInfo[]> {
  const rows = await run<{ table: string; column: string | null; type: string | null }>(db, TABLES_SQL, [schema]);
  const tables: TableInfo[] = [];
  for (const r of rows) {
    let t = tables.at(-1);
    if (t?.name !== r.table) {
      t = { name: r.table, columns: [] };
      tables.push(t);
    }
    if (r.column !== null && r.type !== null) t.columns.push({ name: r.column, type: upperUnquoted(r.type) });
  }
  return tables;
}

/** True when `schema` still holds any object. */
export async function schemaHasObjects(db: Pick<pg.Pool, 'query'>, schema: string): Promise<boolean> {
  const rows = await run<{ has: boolean }>(db, HAS_OBJECTS_SQL, [schema]);
  return rows[0]?.has === true;
}
