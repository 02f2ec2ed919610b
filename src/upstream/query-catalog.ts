/**
 * Catalog reads the REST API answers from the admin pool: the tables of a repo with their
 * columns, and whether a repo schema still holds anything. The callers check first that the
 * principal may read the repo — these functions see every schema.
 */
import type pg from 'pg';
import { fromDriverError } from './pg-error.js';
import { upperUnquoted } from './query-types.js';

/** A column of a table as the catalog describes it. */
export interface ColumnInfo {
  name: string;
  /** As `format_type` prints it, upper-cased outside quoted names: BIGINT, NUMERIC(10,2), TEXT[]. */
  type: string;
  nullable: boolean;
  /** The default expression as Postgres prints it (`pg_get_expr`), e.g. `now()`; null when none. */
  default: string | null;
}

/** A table (or view…) of a repo with its columns in order. */
export interface TableInfo {
  name: string;
  /** Postgres' estimate of the rows (`pg_class.reltuples`); null when never analysed, and for views. */
  rowEstimate: number | null;
  /** The primary key's columns in key order; empty when there is none. */
  primaryKey: string[];
  columns: ColumnInfo[];
}

/**
 * Tables, views, materialized views and foreign tables of one schema, columns in order: one
 * statement, whatever the number of tables. The estimate is the planner's (`reltuples`, -1 until
 * the first VACUUM or ANALYZE): a count(*) would read every table on every page view. A generated
 * column's expression lives where defaults do (pg_attrdef) but is not a default.
 */
const TABLES_SQL = `
SELECT c.relname AS table,
       CASE WHEN c.relkind IN ('v', 'f') OR c.reltuples < 0 THEN NULL ELSE c.reltuples::bigint END AS row_estimate,
       COALESCE(pk.columns, '{}'::text[]) AS primary_key,
       a.attname AS column, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type, NOT a.attnotnull AS nullable,
       CASE WHEN a.attgenerated = '' THEN pg_catalog.pg_get_expr(d.adbin, d.adrelid) END AS default
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN LATERAL (
       SELECT array_agg(ka.attname::text ORDER BY k.ord) AS columns
         FROM pg_catalog.pg_index i
        CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
         JOIN pg_catalog.pg_attribute ka ON ka.attrelid = i.indrelid AND ka.attnum = k.attnum
        WHERE i.indrelid = c.oid AND i.indisprimary) pk ON true
  LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
 ORDER BY c.relname, a.attnum`;

/** Anything recorded as living in the schema (tables, types, functions…): what DROP SCHEMA without CASCADE refuses. */
const HAS_OBJECTS_SQL = `
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_namespace n ON n.oid = d.refobjid
                WHERE d.refclassid = 'pg_catalog.pg_namespace'::regclass AND n.nspname = $1 AND d.deptype = 'n') AS has`;

async function run<R extends pg.QueryResultRow>(db: Pick<pg.Pool, 'query'>, sql: string, values: unknown[]): Promise<R[]> {
  try {
    return (await db.query<R>(sql, values)).rows;
  } catch (err: unknown) {
    throw fromDriverError(err) ?? err;
  }
}

interface TableRow {
  table: string;
  row_estimate: string | null;
  primary_key: string[];
  column: string | null;
  type: string | null;
  nullable: boolean | null;
  default: string | null;
}

/** The tables of `schema` with their columns (see TABLES_SQL). */
export async function listTables(db: Pick<pg.Pool, 'query'>, schema: string): Promise<TableInfo[]> {
  const rows = await run<TableRow>(db, TABLES_SQL, [schema]);
  const tables: TableInfo[] = [];
  for (const r of rows) {
    let t = tables.at(-1);
    if (t?.name !== r.table) {
      // bigint arrives as text; a row estimate stays far below 2^53.
      t = { name: r.table, rowEstimate: r.row_estimate === null ? null : Number(r.row_estimate), primaryKey: r.primary_key, columns: [] };
      tables.push(t);
    }
    if (r.column !== null && r.type !== null) t.columns.push({ name: r.column, type: upperUnquoted(r.type), nullable: r.nullable === true, default: r.default });
  }
  return tables;
}

/** True when `schema` still holds any object. */
export async function schemaHasObjects(db: Pick<pg.Pool, 'query'>, schema: string): Promise<boolean> {
  const rows = await run<{ has: boolean }>(db, HAS_OBJECTS_SQL, [schema]);
  return rows[0]?.has === true;
}
