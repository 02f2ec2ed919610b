// What the walk records for the private catalogs: the references the rewrite (`catalog-rewrite.ts`)
// redirects to the service's schemas, found where the walk already resolves names (with CTE
// scopes known), and the refusals of what cannot be redirected safely.
// - relations: `pg_catalog.pg_class`, unqualified `pg_class`, `information_schema.tables` → the
//   filtered views (`catalog-views.ts`), and columns named through them (`pg_catalog.pg_class.relname`);
// - calls of checked catalog functions with an object that is not a constant name
//   (`pg_get_viewdef(c.oid)`) → the wrapper of the same name (`catalog-functions.ts`);
// - casts to a reg* type of anything but a constant name (`c.oid::regclass`) → wrapped in
//   `repobase_catalog.visible(…)`, which shows objects of the caller's world only.
// Function bodies and DO blocks run their text later, out of reach of the rewrite: there, each of
// these is refused.
import { SqlState } from '../shared/errors.js';
import { informationSchemaRelations } from './catalog.js';
import { CATALOG_SCHEMA, filteredCatalog, INFORMATION_SCHEMA } from './catalog-views.js';
import { pidViews } from './backend-pid.js';
import { sessionViews } from './session-stand-ins.js';
import type { Refusal } from './facts.js';
import { arr, fieldsOf, nodeOf, obj, str, type Json, type JsonObject } from './json.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

/**
 * The service schema a reference to `schema.name` is redirected to, or undefined when it is not a
 * filtered catalog relation. Unqualified names resolve to pg_catalog first (`resolve.ts`).
 */
export function catalogTarget(schema: string | null, name: string): string | undefined {
  if ((schema === null || schema === 'pg_catalog') && (filteredCatalog.has(name) || pidViews.has(name) || sessionViews.has(name))) return CATALOG_SCHEMA;
  if (schema === 'information_schema' && informationSchemaRelations.has(name)) return INFORMATION_SCHEMA;
  return undefined;
}

const cannot = (message: string, hint?: string): Refusal => ({ code: SqlState.FeatureNotSupported, message, ...(hint === undefined ? {} : { hint }) });

export const catalogRefusals = {
  inBody: cannot(
    'reading the system catalogs inside a function body or DO block is not supported',
    'query the catalog in the statement itself: repobase shows each user only their own repos there',
  ),
  objectInBody: (what: string) => cannot(
    `${what} of a computed object inside a function body or DO block is not supported`,
    'name the object as a constant string there, or run it in the statement itself, where repobase shows each user only their own objects',
  ),
  copy: (name: string) => cannot(`COPY of catalog relation ${name} is not supported`, `use COPY (SELECT * FROM ${name}) TO STDOUT`),
  withDatabase: cannot('catalog relations named with a database are not supported', 'leave out the database name'),
  unsafe: cannot(
    'this statement reads the system catalogs in a way repobase cannot filter',
    'repobase shows each user only their own world in the catalogs; write the catalog names plainly (pg_catalog.pg_class or pg_class)',
  ),
  searchPath: (name: string, what = 'relation') => cannot(
    `unqualified catalog ${what} "${name}" is not supported with this search_path`,
    `write pg_catalog.${name}, or put pg_catalog first on the search_path`,
  ),
};

/**
 * A RangeVar reading a relation: recorded when it is a filtered catalog relation. `isTarget`: the
 * relation a statement acts on (`COPY pg_class TO STDOUT`, refused: COPY cannot read a view;
 * `LOCK pg_class IN ACCESS SHARE MODE`, left alone: a lock shows nothing).
 */
export function noteCatalogRelation(w: Walker, rv: JsonObject, schema: string | null, name: string, isTarget: boolean): void {
  const target = catalogTarget(schema, name);
  if (target === undefined) return;
  if (isTarget) {
    if (w.command === 'COPY') w.refuse(catalogRefusals.copy(name));
    return;
  }
  if (str(rv.catalogname) !== undefined) return w.refuse(catalogRefusals.withDatabase);
  if (w.ctx.offsets === null) return w.refuse(catalogRefusals.inBody);
  if (typeof rv.location !== 'number' || rv.location < 0) return w.refuse(catalogRefusals.unsafe);
  w.facts.catalog.push({ kind: 'relation', location: rv.location, schema, name, target });
}

/**
 * A call redirected to its stand-in in the service's schema (`pg_notify`, checked catalog
 * functions). `what` names it in the refusal inside bodies.
 */
export function noteFunctionRedirect(w: Walker, names: readonly string[], location: Json | undefined, what: string): void {
  if (w.ctx.offsets === null) return w.refuse(catalogRefusals.objectInBody(what));
  if (typeof location !== 'number' || location < 0) return w.refuse(catalogRefusals.unsafe);
  const name = names[names.length - 1] ?? '';
  w.facts.catalog.push({ kind: 'function', location, schema: names.length === 2 ? (names[0] ?? null) : null, name, target: CATALOG_SCHEMA });
}

/** The smallest parser location in a tree: where an expression's first token is (or inside its parentheses). */
function firstLocation(value: Json | undefined): number {
  let min = Infinity;
  const visit = (v: Json | undefined): void => {
    if (Array.isArray(v)) {
      for (const item of v) visit(item);
    } else if (v !== null && typeof v === 'object') {
      for (const key in v) {
        const field = v[key];
        if (key === 'location' && typeof field === 'number' && field >= 0) min = Math.min(min, field);
        else visit(field);
      }
    }
  };
  visit(value);
  return min;
}

/** A cast to a reg* type of a value that is not a constant name: wrapped to show only visible objects. */
export function noteRegCast(w: Walker, cast: JsonObject, type: string): void {
  if (w.ctx.offsets === null) return w.refuse(catalogRefusals.objectInBody(`a cast to ${type}`));
  const argLocation = firstLocation(cast.arg);
  const typeLocation = fieldsOf(cast.typeName, 'TypeName')?.location;
  const location = castLocation(cast);
  if (location === undefined || !Number.isFinite(argLocation) || typeof typeLocation !== 'number') return w.refuse(catalogRefusals.unsafe);
  w.facts.catalog.push({ kind: 'cast', location, schema: null, name: type, target: CATALOG_SCHEMA, argLocation, typeLocation });
}

/** Where a cast is written: its `::` or CAST, or for a typed literal (`regclass '1'`), its type name. */
export function castLocation(cast: JsonObject): number | undefined {
  const at = typeof cast.location === 'number' && cast.location >= 0 ? cast.location : fieldsOf(cast.typeName, 'TypeName')?.location;
  return typeof at === 'number' && at >= 0 ? at : undefined;
}

/**
 * The name Postgres gives an unnamed output column of `node` (a part of its FigureColname): a
 * column's or function's name is strong, a cast's type name weak; `wrapped` casts read as calls
 * of the visibility stand-in, as after the rewrite.
 */
function columnName(node: Json | undefined, wrapped: ReadonlySet<number>): { name: string; strong: boolean } | undefined {
  const n = nodeOf(node);
  if (n === undefined) return undefined;
  const [type, f] = n;
  if (type === 'ColumnRef') {
    const last = str(fieldsOf(arr(f.fields).at(-1), 'String')?.sval);
    return last === undefined ? undefined : { name: last, strong: true };
  }
  if (type === 'FuncCall') return { name: str(fieldsOf(arr(f.funcname).at(-1), 'String')?.sval) ?? '', strong: true };
  if (type === 'CollateClause') return columnName(f.arg, wrapped);
  if (type === 'TypeCast') {
    if (wrapped.has(castLocation(f) ?? -1)) return { name: 'visible', strong: true };
    const inner = columnName(f.arg, wrapped);
    if (inner?.strong === true) return inner;
    return { name: str(fieldsOf(arr(obj(f.typeName)?.names).at(-1), 'String')?.sval) ?? '', strong: false };
  }
  return undefined;
}

/**
 * An output column without a name whose value is (a chain of casts around) a wrapped cast:
 * Postgres would name it after the wrapper, so the rewrite names it as before (`AS "tableoid"`),
 * right after the outermost cast.
 */
function resTarget(w: Walker, n: JsonObject, scope: Scope): void {
  const before = w.facts.catalog.length;
  w.rest(n, [], 'read', scope);
  if (n.name !== undefined || w.facts.catalog.length === before || typeof n.location !== 'number') return;
  const casts = new Set(w.facts.catalog.slice(before).filter((r) => r.kind === 'cast').map((r) => r.location));
  if (casts.size === 0) return;
  const original = columnName(n.val, new Set())?.name ?? '?column?';
  if ((columnName(n.val, casts)?.name ?? '?column?') === original) return;
  const top = fieldsOf(n.val, 'TypeCast');
  const at = top === undefined ? undefined : castLocation(top);
  const typeLocation = fieldsOf(top?.typeName, 'TypeName')?.location;
  if (at === undefined || typeof typeLocation !== 'number') return w.refuse(catalogRefusals.unsafe);
  w.facts.catalog.push({ kind: 'alias', location: at, schema: null, name: original, target: CATALOG_SCHEMA, typeLocation, argLocation: n.location });
}

// `pg_catalog.pg_class.relname` names the relation by its schema: it follows the redirect.
function columnRef(w: Walker, n: JsonObject, scope: Scope): void {
  const fields = arr(n.fields).map((f) => str(fieldsOf(f, 'String')?.sval));
  if (fields.length >= 3) {
    const [schema, name] = fields.length === 3 ? [fields[0], fields[1]] : [fields[1], fields[2]];
    const target = schema === undefined || name === undefined ? undefined : catalogTarget(schema, name);
    if (target !== undefined && schema !== undefined && name !== undefined) {
      if (fields.length > 3) w.refuse(catalogRefusals.withDatabase);
      else if (w.ctx.offsets === null) w.refuse(catalogRefusals.inBody);
      else if (typeof n.location !== 'number' || n.location < 0) w.refuse(catalogRefusals.unsafe);
      else w.facts.catalog.push({ kind: 'column', location: n.location, schema, name, target });
    }
  }
  w.rest(n, ['fields'], 'read', scope);
}

export const catalogHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['ColumnRef', { handle: columnRef }],
  ['ResTarget', { handle: resTarget }],
];
