/**
 * The final step of an import, in one transaction on the staging connection (the user's own
 * role): create the table with the inferred types, or replace an existing one (built under a
 * reserved name, then swapped in), or append to one by casting staged text into its column
 * types. Any failure rolls back: no new table, the old one untouched. A value that does not cast
 * is named with its line.
 */
import type pg from 'pg';
import { escapeIdentifier } from 'pg';
import { PgError, SqlState } from '../shared/errors.js';
import { fromDriverError } from '../upstream/pg-error.js';
import { castSql, LOAD_SETTINGS, readableSql } from './convert.js';
import { located } from './located.js';
import { RESERVED_PREFIX } from './names.js';
import { STAGING, stagingColumn } from './staging.js';
import type { ColumnOverride, ImportMode, InferredColumn, Written } from './types.js';

export interface Target {
  schema: string;
  table: string;
  mode: ImportMode;
  /**
   * For a write key's upload: the comment that asks Postgres to lend these tables of `schema` to
   * the key's role for a statement that changes them (policy/key-scope.ts); put in front of it.
   */
  lend?: ((tables: readonly string[]) => string) | undefined;
}

/** What goes in front of a statement changing `tables` of the target (nothing for a user's own role). */
export function lendFor(target: Target, tables: readonly string[]): string {
  return target.lend?.(tables) ?? '';
}

/** A column of an existing table, with its type as `format_type` spells it. */
export interface ExistingColumn {
  name: string;
  type: string;
}

const qualified = (schema: string, table: string) => `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`;

async function run(client: pg.ClientBase, sql: string, values?: unknown[]): Promise<pg.QueryResult> {
  try {
    return await client.query(sql, values);
  } catch (err: unknown) {
    throw fromDriverError(err) ?? err;
  }
}

/** The columns of an existing table (as the user sees it), or undefined when there is none. */
export async function existingColumns(client: pg.ClientBase, schema: string, table: string): Promise<ExistingColumn[] | undefined> {
  const res = await run(
    client,
    `SELECT a.attname AS name, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
      ORDER BY a.attnum`,
    [schema, table],
  );
  if (res.rowCount === 0) return undefined;
  return (res.rows as { name: string | null; type: string | null }[]).filter((r) => r.name !== null).map((r) => ({ name: r.name!, type: r.type! }));
}

const where = (skipLine: number | undefined) => (skipLine === undefined ? '' : ` WHERE line <> ${Number(skipLine)}`);

async function inTransaction<T>(client: pg.ClientBase, fn: () => Promise<T>): Promise<T> {
  await run(client, 'BEGIN');
  try {
    await run(client, LOAD_SETTINGS);
    const result = await fn();
    await run(client, 'COMMIT');
    return result;
  } catch (err: unknown) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** A staged column cast to a type: its position, the name the error gives it, and how its values are written. */
interface CastColumn {
  index: number;
  name: string;
  type: string;
  written?: Written | undefined;
}

/**
 * Finds the first staged value that does not read as `type` (Postgres 16+: pg_input_is_valid),
 * to name its line and column in the error; undefined when none is found or the server is older.
 */
async function firstBadValue(client: pg.ClientBase, columns: CastColumn[], skipLine: number | undefined): Promise<{ line: number; column: string; value: string; type: string } | undefined> {
  try {
    return await inTransaction(client, async () => {
      for (const c of columns) {
        if (c.type === 'text') continue;
        const col = stagingColumn(c.index);
        const res = await client.query<{ line: string; value: string }>(
          `SELECT line, ${col} AS value FROM ${STAGING} WHERE ${col} IS NOT NULL AND NOT pg_input_is_valid(${readableSql(col, c.type, c.written)}, $1)${skipLine === undefined ? '' : ` AND line <> ${Number(skipLine)}`} ORDER BY line LIMIT 1`,
          [c.type],
        );
        const row = res.rows[0];
        if (row) return { line: Number(row.line), column: c.name, value: row.value, type: c.type };
      }
      return undefined;
    });
  } catch {
    return undefined;
  }
}

async function explainCastFailure(
  client: pg.ClientBase,
  err: unknown,
  columns: CastColumn[],
  skipLine: number | undefined,
  hint: string,
): Promise<unknown> {
  const pgErr = fromDriverError(err);
  if (!pgErr || !pgErr.code.startsWith('22')) return err;
  const bad = await firstBadValue(client, columns, skipLine);
  if (!bad) return pgErr;
  return located(pgErr.code, bad.line, `line ${bad.line}, column "${bad.column}": ${pgErr.message}`, {
    detail: `the value ${JSON.stringify(bad.value.slice(0, 200))} is not a valid ${bad.type}`,
    hint,
  });
}

/** Creates (or replaces) the table with `columns` from the staged rows; returns the row count. */
export async function createTable(client: pg.ClientBase, target: Target, columns: InferredColumn[], skipLine: number | undefined): Promise<number> {
  const build = target.mode === 'replace' ? `${RESERVED_PREFIX}new_${process.pid}_${Date.now().toString(36)}` : target.table;
  const table = qualified(target.schema, build);
  const defs = columns.map((c) => `${escapeIdentifier(c.name)} ${c.type}`).join(', ');
  const select = columns.map((c, i) => castSql(stagingColumn(i), c.type, c.written)).join(', ');
  try {
    return await inTransaction(client, async () => {
      await run(client, `CREATE TABLE ${table} (${defs})`);
      const res = await run(client, `INSERT INTO ${table} SELECT ${select} FROM ${STAGING}${where(skipLine)}`);
      if (target.mode === 'replace') {
        await run(client, `${lendFor(target, [target.table])}DROP TABLE IF EXISTS ${qualified(target.schema, target.table)}`);
        await run(client, `${lendFor(target, [build])}ALTER TABLE ${table} RENAME TO ${escapeIdentifier(target.table)}`);
      }
      return res.rowCount ?? 0;
    });
  } catch (err: unknown) {
    const typed = columns.map((c, i) => ({ index: i, name: c.name, type: c.type, written: c.written }));
    throw await explainCastFailure(client, err, typed, skipLine, 'fix the value in the file, or choose another type for the column (the columns field)');
  }
}

/** A file column on append: its position in the file, the table column it goes to, and how the file writes its values. */
export interface AppendTarget {
  index: number;
  name: string;
  type: string;
  written?: Written | undefined;
}

/**
 * Where each file column goes on append: with `byName`, the table column of the same name; else
 * the one at the same position. An override's type must be that column's type — an append keeps
 * the table as it is, so a different type would be silently ignored otherwise.
 */
export function appendTargets(target: Target, existing: ExistingColumn[], fileColumns: readonly string[], byName: boolean, overrides?: readonly ColumnOverride[]): AppendTarget[] {
  const byColumn = new Map(existing.map((c) => [c.name, c]));
  const hint = `the table's columns: ${existing.map((c) => c.name).join(', ')}`;
  return fileColumns.map((name, index) => {
    const to = byName ? byColumn.get(name) : existing[index];
    if (!to) {
      throw new PgError(
        byName ? '42703' : SqlState.BadCopyFileFormat,
        byName ? `column "${name}" of the file is not a column of table "${target.table}"` : `the file has ${fileColumns.length} columns; table "${target.table}" has ${existing.length}`,
        { hint },
      );
    }
    const wanted = overrides?.[index]?.type;
    if (wanted !== undefined && wanted !== to.type) {
      throw new PgError('42804', `column "${to.name}" of table "${target.table}" is ${to.type.toUpperCase()}, not ${wanted.toUpperCase()}`, {
        hint: 'an append keeps the table\'s column types: leave "type" out of columns, or change the table first (ALTER TABLE … ALTER COLUMN … TYPE)',
      });
    }
    return { index, name: to.name, type: to.type };
  });
}

/**
 * Appends the staged rows to an existing table, each file column to its `mapped` table column
 * (appendTargets). Table columns the file lacks get their defaults.
 */
export async function appendRows(client: pg.ClientBase, target: Target, mapped: readonly AppendTarget[], skipLine: number | undefined): Promise<number> {
  const table = qualified(target.schema, target.table);
  const cols = mapped.map((m) => escapeIdentifier(m.name)).join(', ');
  const select = mapped.map((m) => castSql(stagingColumn(m.index), m.type, m.written)).join(', ');
  try {
    return await inTransaction(client, async () => {
      const res = await run(client, `INSERT INTO ${table} (${cols}) SELECT ${select} FROM ${STAGING}${where(skipLine)}`);
      return res.rowCount ?? 0;
    });
  } catch (err: unknown) {
    throw await explainCastFailure(client, err, [...mapped], skipLine, 'fix the value in the file, or change the column type first (ALTER TABLE … ALTER COLUMN … TYPE text)');
  }
}
