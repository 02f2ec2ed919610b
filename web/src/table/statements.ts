/**
 * Every statement the table page runs, built here and only here. Names go through quoteIdent,
 * values through quoteLiteral (as untyped literals: the column gives them their type). The
 * fragments a person writes as SQL on purpose — a type, a DEFAULT or a USING expression — are
 * placed as written: they are shown in full before they run, and the API runs one statement
 * per request, so they cannot smuggle in a second one.
 */
import { escapeLike, qualifiedTable, quoteIdent, quoteLiteral } from '../lib/sql.ts';

/** A table of a repo: `schema` is the repo's full name (`alice/sales`). */
export interface TableRef {
  schema: string;
  table: string;
}

const target = (t: TableRef) => qualifiedTable(t.schema, t.table);

// --- reading ---------------------------------------------------------------------------------

export type FilterOp = 'eq' | 'ne' | 'lt' | 'gt' | 'contains' | 'null' | 'notnull';

export const FILTER_OPS: ReadonlyArray<{ op: FilterOp; label: string; takesValue: boolean }> = [
  { op: 'eq', label: '=', takesValue: true },
  { op: 'ne', label: '≠', takesValue: true },
  { op: 'lt', label: '<', takesValue: true },
  { op: 'gt', label: '>', takesValue: true },
  { op: 'contains', label: 'contains', takesValue: true },
  { op: 'null', label: 'is null', takesValue: false },
  { op: 'notnull', label: 'is not null', takesValue: false },
];

export interface Filter {
  column: string;
  op: FilterOp;
  value: string;
}

/** The condition of one filter, or null when it does not filter yet (an operator waiting for a value). */
export function filterCondition({ column, op, value }: Filter): string | null {
  const c = quoteIdent(column);
  if (value === '' && op !== 'null' && op !== 'notnull') return null;
  switch (op) {
    case 'null':
      return `${c} IS NULL`;
    case 'notnull':
      return `${c} IS NOT NULL`;
    case 'contains':
      // On the text form, so that it also finds digits in numbers and words in json.
      return `${c}::text ILIKE ${quoteLiteral(`%${escapeLike(value)}%`)}`;
    case 'eq':
      return `${c} = ${quoteLiteral(value)}`;
    case 'ne':
      return `${c} <> ${quoteLiteral(value)}`;
    case 'lt':
      return `${c} < ${quoteLiteral(value)}`;
    case 'gt':
      return `${c} > ${quoteLiteral(value)}`;
    default:
      return assertNever(op);
  }
}

/**
 * How pages follow each other. `key` is the unique key that orders rows and ties: the primary
 * key's columns, or `ctid` for a table without one. `sort` is a column the person sorts by,
 * ascending with NULLs last or descending with NULLs first (Postgres' defaults, so one order is
 * the exact reverse of the other).
 */
export interface Order {
  key: 'ctid' | string[];
  sort: { column: string; desc: boolean } | null;
}

/** Where the previous page ended: literals of its last row's key and sort value. */
export interface Cursor {
  key: string[];
  sort: string | null;
}

/** The key expressions of an order: quoted columns, or the `ctid` system column. */
function keyExprs(order: Order): string[] {
  return order.key === 'ctid' ? ['ctid'] : order.key.map(quoteIdent);
}

/** A tid literal for the ctid keyset: `'(12,3)'::tid`. */
export function tidLiteral(ctid: string): string {
  return `${quoteLiteral(ctid)}::tid`;
}

function tuple(items: string[]): string {
  return items.length === 1 ? (items[0] as string) : `(${items.join(', ')})`;
}

/** Rows after `cursor` in `order`: a keyset condition, never an OFFSET. */
function after(order: Order, cursor: Cursor): string {
  const desc = order.sort?.desc ?? false;
  const keyAfter = `${tuple(keyExprs(order))} ${desc ? '<' : '>'} ${tuple(cursor.key)}`;
  if (!order.sort) return keyAfter;
  const s = quoteIdent(order.sort.column);
  if (cursor.sort === null) {
    // The previous page ended among the NULLs: last when ascending, first when descending.
    return desc ? `(${s} IS NOT NULL OR (${s} IS NULL AND ${keyAfter}))` : `(${s} IS NULL AND ${keyAfter})`;
  }
  const v = cursor.sort;
  return desc
    ? `(${s} < ${v} OR (${s} = ${v} AND ${keyAfter}))`
    : `(${s} > ${v} OR (${s} = ${v} AND ${keyAfter}) OR ${s} IS NULL)`;
}

function orderBy(order: Order): string {
  const desc = order.sort?.desc ?? false;
  const dir = desc ? 'DESC' : 'ASC';
  const parts = keyExprs(order).map((k) => `${k} ${dir}`);
  if (order.sort) parts.unshift(`${quoteIdent(order.sort.column)} ${dir} NULLS ${desc ? 'FIRST' : 'LAST'}`);
  return parts.join(', ');
}

/**
 * One page: `SELECT * FROM t WHERE <filters> AND <after cursor> ORDER BY <sort>, <key> LIMIT n`.
 * With the ctid key the ctid is selected first, to continue from.
 */
export function selectPage(t: TableRef, order: Order, filters: Filter[], cursor: Cursor | null, limit: number): string {
  const conditions = filters.map(filterCondition).filter((c): c is string => c !== null);
  if (cursor) conditions.push(after(order, cursor));
  const where = conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '';
  const columns = order.key === 'ctid' ? 'ctid, *' : '*';
  return `SELECT ${columns} FROM ${target(t)}${where} ORDER BY ${orderBy(order)} LIMIT ${limit}`;
}

/** For a relation with neither a primary key nor a ctid (a view): its first rows, once. */
export function selectFirstRows(t: TableRef, sort: Order['sort'], filters: Filter[], limit: number): string {
  const conditions = filters.map(filterCondition).filter((c): c is string => c !== null);
  const where = conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '';
  const by = sort ? ` ORDER BY ${quoteIdent(sort.column)} ${sort.desc ? 'DESC NULLS FIRST' : 'ASC NULLS LAST'}` : '';
  return `SELECT * FROM ${target(t)}${where}${by} LIMIT ${limit}`;
}

export function countRows(t: TableRef): string {
  return `SELECT count(*) FROM ${target(t)}`;
}

// --- changing rows ---------------------------------------------------------------------------

/** `"id" = '5'`, or `("a", "b") = ('1', 'x')` for a composite key. */
function keyMatch(pk: string[], values: string[]): string {
  return `${tuple(pk.map(quoteIdent))} = ${tuple(values)}`;
}

/** `values` are literals (NULL or a quoted text form). */
export function updateCell(t: TableRef, column: string, value: string, pk: string[], key: string[]): string {
  return `UPDATE ${target(t)} SET ${quoteIdent(column)} = ${value} WHERE ${keyMatch(pk, key)} RETURNING *`;
}

/** The columns given a value (literals); the others take their DEFAULT. */
export function insertRow(t: TableRef, values: Array<{ column: string; value: string }>): string {
  if (values.length === 0) return `INSERT INTO ${target(t)} DEFAULT VALUES RETURNING *`;
  const columns = values.map((v) => quoteIdent(v.column)).join(', ');
  return `INSERT INTO ${target(t)} (${columns}) VALUES (${values.map((v) => v.value).join(', ')}) RETURNING *`;
}

/** `keys`: one list of key literals per row. */
export function deleteRows(t: TableRef, pk: string[], keys: string[][]): string {
  return `DELETE FROM ${target(t)} WHERE ${tuple(pk.map(quoteIdent))} IN (${keys.map(tuple).join(', ')})`;
}

// --- changing columns ------------------------------------------------------------------------

export function addColumn(t: TableRef, column: string, type: string, defaultExpr: string): string {
  const def = defaultExpr.trim() ? ` DEFAULT ${defaultExpr.trim()}` : '';
  return `ALTER TABLE ${target(t)} ADD COLUMN ${quoteIdent(column)} ${type.trim()}${def}`;
}

export function renameColumn(t: TableRef, column: string, newName: string): string {
  return `ALTER TABLE ${target(t)} RENAME COLUMN ${quoteIdent(column)} TO ${quoteIdent(newName)}`;
}

export function changeType(t: TableRef, column: string, type: string, using: string): string {
  const u = using.trim() ? ` USING ${using.trim()}` : '';
  return `ALTER TABLE ${target(t)} ALTER COLUMN ${quoteIdent(column)} SET DATA TYPE ${type.trim()}${u}`;
}

export function dropColumn(t: TableRef, column: string): string {
  return `ALTER TABLE ${target(t)} DROP COLUMN ${quoteIdent(column)}`;
}

/**
 * Before a type change: how many values would fail the automatic conversion, and up to five of
 * them. `pg_input_is_valid` (Postgres 16+) reads the value's text as the new type without
 * raising; the type goes in as a string literal.
 */
export function conversionCheck(t: TableRef, column: string, type: string): string {
  const c = quoteIdent(column);
  const failing = `${c} IS NOT NULL AND NOT pg_input_is_valid(${c}::text, ${quoteLiteral(type.trim())})`;
  return `SELECT count(*) FILTER (WHERE ${failing}) AS failures, (array_agg(${c}::text) FILTER (WHERE ${failing}))[1:5] AS examples FROM ${target(t)}`;
}

function assertNever(x: never): never {
  throw new Error(`unexpected ${String(x)}`);
}
