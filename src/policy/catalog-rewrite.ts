// Private catalogs: every read of a catalog relation that can name another user's objects is
// redirected to its filtered view (`catalog-views.ts`): `pg_catalog.pg_class` and unqualified
// `pg_class` become `repobase_catalog.pg_class`, `information_schema.tables` becomes
// `repobase_information_schema.tables`, and a column named through its relation
// (`pg_catalog.pg_class.relname`) follows. The views keep the relations' names and columns, so
// implicit aliases, `*`, joins on oids and casts to reg types work as before.
//
// The rewrite does not depend on who asks (the views filter by `current_user` at run time), so it
// is part of the cached analysis. The walk (`walker.ts`) records each reference where it already
// resolves names, with CTE scopes known; here the references are spliced into the original text
// (comments and formatting survive), the result is re-parsed and must equal the original tree
// with exactly those names changed. Anything else is refused, never forwarded unfiltered:
// catalog reads inside function bodies and DO blocks (their text is run later, out of reach),
// a catalog named with a database (`db.pg_catalog.pg_class`), `COPY pg_class TO …`, and a splice
// that does not verify. Statements without catalog references are not touched.
import { SqlState } from '../shared/errors.js';
import { informationSchemaRelations } from './catalog.js';
import { CATALOG_SCHEMA, filteredCatalog, INFORMATION_SCHEMA } from './catalog-views.js';
import type { CatalogRef, Refusal, StatementFacts } from './facts.js';
import { arr, fieldsOf, nodeOf, obj, str, type Json, type JsonObject } from './json.js';
import { scanTokens, type Token } from './lexer.js';
import type { Offsets } from './offsets.js';
import { isTempSchema } from './names.js';
import { parseSql, type RawStatement } from './parse.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

/**
 * The service schema a reference to `schema.name` is redirected to, or undefined when it is not a
 * filtered catalog relation. Unqualified names resolve to pg_catalog first (`resolve.ts`).
 */
export function catalogTarget(schema: string | null, name: string): string | undefined {
  if ((schema === null || schema === 'pg_catalog') && filteredCatalog.has(name)) return CATALOG_SCHEMA;
  if (schema === 'information_schema' && informationSchemaRelations.has(name)) return INFORMATION_SCHEMA;
  return undefined;
}

const cannot = (message: string, hint?: string): Refusal => ({ code: SqlState.FeatureNotSupported, message, ...(hint === undefined ? {} : { hint }) });

export const catalogRefusals = {
  inBody: cannot(
    'reading the system catalogs inside a function body or DO block is not supported',
    'query the catalog in the statement itself: repobase shows each user only their own repos there',
  ),
  copy: (name: string) => cannot(`COPY of catalog relation ${name} is not supported`, `use COPY (SELECT * FROM ${name}) TO STDOUT`),
  withDatabase: cannot('catalog relations named with a database are not supported', 'leave out the database name'),
  unsafe: cannot(
    'this statement reads the system catalogs in a way repobase cannot filter',
    'repobase shows each user only their own world in the catalogs; write the catalog names plainly (pg_catalog.pg_class or pg_class)',
  ),
  searchPath: (name: string) => cannot(
    `unqualified catalog relation "${name}" is not supported with this search_path`,
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

export const catalogHandlers: ReadonlyArray<[string, HandlerEntry]> = [['ColumnRef', { handle: columnRef }]];

interface Splice {
  from: number;
  to: number;
  text: string;
}

/** Whether a token is the identifier `name` as the parser read it (unquoted words fold to lower case). */
function isIdent(t: Token | undefined, name: string): boolean {
  if (t === undefined) return false;
  if (t.kind === 'qident') return t.text === name;
  return t.kind === 'ident' && t.text.toLowerCase() === name;
}

function spliceFor(sql: string, ref: CatalogRef, at: number): Splice | undefined {
  // The name is at most two identifiers and a dot: a short window is enough, and a window
  // that cuts it short fails the checks below (and then verification), never splices wrongly.
  const tokens = scanTokens(sql, at, Math.min(sql.length, at + 512)).slice(0, 3);
  const [first, dot, second] = tokens;
  if (ref.schema !== null) {
    if (!isIdent(first, ref.schema) || dot?.text !== '.' || dot.kind !== 'punct' || !isIdent(second, ref.name)) return undefined;
    return { from: first!.start, to: first!.end, text: ref.target };
  }
  if (!isIdent(first, ref.name)) return undefined;
  return { from: first!.start, to: first!.start, text: `${ref.target}.` };
}

export interface StatementTree {
  node: Json;
  start: number;
  end: number;
}

/**
 * The query string with every recorded catalog reference redirected, and its statements as
 * re-parsed (the seed rule runs on them next); a refusal when a splice does not verify.
 */
export function catalogRewrite(
  sql: string,
  statements: readonly StatementTree[],
  refs: readonly CatalogRef[],
  offsets: Offsets,
): { sql: string; parsed: RawStatement[] } | Refusal {
  const splices: Splice[] = [];
  for (const ref of refs) {
    const splice = spliceFor(sql, ref, offsets.index(ref.location));
    if (splice === undefined) return catalogRefusals.unsafe;
    splices.push(splice);
  }
  splices.sort((a, b) => b.from - a.from);
  let out = sql;
  for (const { from, to, text } of splices) out = out.slice(0, from) + text + out.slice(to);
  const parsed = parseSql(out);
  if (!parsed.ok || parsed.statements.length !== statements.length) return catalogRefusals.unsafe;
  const relations = new Map(refs.filter((r) => r.kind === 'relation').map((r) => [r.location, r.target]));
  const columns = new Map(refs.filter((r) => r.kind !== 'relation').map((r) => [r.location, r.target]));
  const same = parsed.statements.every((s, i) => {
    const expected = edited(statements[i]?.node ?? null, relations, columns);
    return JSON.stringify(edited(s.node, new Map(), new Map())) === JSON.stringify(expected);
  });
  return same ? { sql: out, parsed: parsed.statements } : catalogRefusals.unsafe;
}

/**
 * A copy of the tree without source locations (the splices shift them), with the schema of the
 * RangeVars at `relations` and the first field of the ColumnRefs at `columns` replaced.
 */
function edited(value: Json | undefined, relations: ReadonlyMap<number, string>, columns: ReadonlyMap<number, string>): Json {
  if (Array.isArray(value)) return value.map((v) => edited(v, relations, columns));
  const o = obj(value);
  if (o === undefined) return value ?? null;
  const out: JsonObject = {};
  // Keys in order: an added schemaname must land where the parser puts it.
  for (const key of Object.keys(o).sort()) if (key !== 'location') out[key] = edited(o[key], relations, columns);
  const location = typeof o.location === 'number' ? o.location : -1;
  const relation = relations.get(location);
  if (relation !== undefined && typeof o.relname === 'string' && 'relpersistence' in o) {
    out.schemaname = relation;
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1))) as JsonObject;
  }
  const node = nodeOf(value);
  // A column's first field (its schema) or a function's name list (`pg_notify` → its stand-in).
  const named = node?.[0] === 'ColumnRef' || node?.[0] === 'FuncCall' ? columns.get(typeof node[1].location === 'number' ? node[1].location : -1) : undefined;
  if (named !== undefined && node !== undefined) {
    const field = node[0] === 'ColumnRef' ? 'fields' : 'funcname';
    const inner = obj(out[node[0]]);
    const list = arr(inner?.[field]);
    if (inner !== undefined && list.length > 0) {
      inner[field] = node[0] === 'ColumnRef' ? [{ String: { sval: named } }, ...list.slice(1)] : [{ String: { sval: named } }, ...list.slice(-1)];
    }
  }
  return out;
}

/**
 * Unqualified names are redirected on the assumption that they land in pg_catalog (searched
 * first unless the path lists it) and never in information_schema. A session path that breaks
 * either assumption makes such a statement refused, never silently unfiltered or misdirected.
 */
export function checkCatalogPath(facts: StatementFacts, path: readonly string[]): Refusal | null {
  const catalogAt = path.indexOf('pg_catalog');
  if (catalogAt > 0 && path.slice(0, catalogAt).some((s) => s !== '$user' && !isTempSchema(s))) {
    const ref = facts.catalog.find((r) => r.kind !== 'column' && r.schema === null);
    if (ref !== undefined) return catalogRefusals.searchPath(ref.name);
  }
  if (path.includes('information_schema')) {
    const ref = facts.refs.find((r) => r.kind === 'relation' && r.schema === null && !r.create && informationSchemaRelations.has(r.name));
    if (ref !== undefined) return { ...catalogRefusals.searchPath(ref.name), hint: `write information_schema.${ref.name}` };
  }
  return null;
}
