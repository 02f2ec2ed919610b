// Private catalogs: the references the walk recorded (`catalog-refs.ts`) are spliced into the
// original text (comments and formatting survive): `pg_catalog.pg_class` and unqualified
// `pg_class` become `repobase_catalog.pg_class`, `information_schema.tables` becomes
// `repobase_information_schema.tables`, a column named through its relation
// (`pg_catalog.pg_class.relname`) follows, a checked function call `pg_get_viewdef(o)` becomes
// `repobase_catalog.pg_get_viewdef(o)`, and a cast `o::regclass` becomes
// `repobase_catalog.visible(o::regclass)`. The views and stand-ins keep the names, columns and
// types, so implicit aliases, `*`, joins on oids and comparisons of reg values work as before.
//
// The rewrite does not depend on who asks (the views filter by `current_user` at run time), so it
// is part of the cached analysis. The result is re-parsed and must equal the original tree with
// exactly those changes; anything else is refused, never forwarded unfiltered.
import { CATALOG_SCHEMA } from './catalog-views.js';
import { castLocation, catalogRefusals } from './catalog-refs.js';
import { informationSchemaRelations } from './catalog.js';
import type { CatalogRef, Refusal, StatementFacts } from './facts.js';
import { arr, nodeOf, obj, type Json, type JsonObject } from './json.js';
import { scanTokens, type Token } from './lexer.js';
import type { Offsets } from './offsets.js';
import { isTempSchema, quoteIdent } from './names.js';
import { parseSql, type RawStatement } from './parse.js';
import { applySplices, type Edit, type Splice } from './splices.js';

/** The stand-in a cast to a reg* type is wrapped in. */
const VISIBLE = 'visible';

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

/** Matching parentheses of a token list: index of `(` → index of its `)` and back. */
function parenMatches(tokens: readonly Token[]): Map<number, number> {
  const matches = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((t, i) => {
    if (t.kind !== 'punct') return;
    if (t.text === '(' || t.text === '[') open.push(i);
    else if (t.text === ')' || t.text === ']') {
      const j = open.pop();
      if (j !== undefined) {
        matches.set(j, i);
        matches.set(i, j);
      }
    }
  });
  return matches;
}

/** Index of the token starting at UTF-16 index `at`, or -1. */
function tokenAt(tokens: readonly Token[], at: number): number {
  let lo = 0;
  let hi = tokens.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const start = tokens[mid]!.start;
    if (start === at) return mid;
    if (start < at) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Index of the last token of a type name starting at token `i`: `schema.name`, then `[]`s. */
function typeNameEnd(tokens: readonly Token[], i: number, matches: ReadonlyMap<number, number>): number {
  let end = i;
  while (tokens[end + 1]?.text === '.' && tokens[end + 2] !== undefined && tokens[end + 2]!.kind.endsWith('ident')) end += 2;
  while (tokens[end + 1]?.text === '[' && matches.has(end + 1)) end = matches.get(end + 1)!;
  return end;
}

/** Where a cast's text ends: after its type name for `v::t`, its `)` for `CAST(v AS t)`, its literal for `t 'literal'`. */
function castEnd(tokens: readonly Token[], matches: ReadonlyMap<number, number>, at: number, typeLocation: number, offsets: Offsets): number | undefined {
  const first = tokens[at];
  let last: number;
  if (first?.kind === 'op' && first.text === '::') last = typeNameEnd(tokens, tokenAt(tokens, offsets.index(typeLocation)), matches);
  else if (first?.kind === 'ident' && first.text.toLowerCase() === 'cast' && tokens[at + 1]?.text === '(') last = matches.get(at + 1) ?? -1;
  else if (first !== undefined) {
    last = typeNameEnd(tokens, at, matches) + 1;
    if (tokens[last]?.kind !== 'string') return undefined;
  } else return undefined;
  return tokens[last]?.end;
}

/** The splice naming an output column as it was named before its cast was wrapped. */
function aliasSplice(tokens: readonly Token[], matches: ReadonlyMap<number, number>, ref: CatalogRef, offsets: Offsets): Splice | undefined {
  const end = ref.typeLocation === undefined ? undefined : castEnd(tokens, matches, tokenAt(tokens, offsets.index(ref.location)), ref.typeLocation, offsets);
  return end === undefined ? undefined : { from: end, to: end, text: ` AS ${quoteIdent(ref.name)}` };
}

/**
 * The two splices wrapping a cast in `repobase_catalog.visible(…)`: before its value (and any
 * parentheses around it) and after its type name, for `v::t`, `CAST(v AS t)` and `t 'literal'`.
 */
function castSplices(tokens: readonly Token[], matches: ReadonlyMap<number, number>, ref: CatalogRef, offsets: Offsets): Splice[] | undefined {
  const at = tokenAt(tokens, offsets.index(ref.location));
  const first = tokens[at];
  if (first === undefined || ref.argLocation === undefined || ref.typeLocation === undefined) return undefined;
  let from: number;
  if (first.kind === 'op' && first.text === '::') {
    let start = tokenAt(tokens, offsets.index(ref.argLocation));
    if (start < 0 || start >= at) return undefined;
    // `(v)::t`: parentheses that close before the cast belong to its value.
    while (tokens[start - 1]?.text === '(' && (matches.get(start - 1) ?? Infinity) < at) start--;
    from = tokens[start]!.start;
  } else {
    // `CAST(v AS t)`, or `regclass '16384'`: a type name, then the literal.
    from = first.start;
  }
  const end = castEnd(tokens, matches, at, ref.typeLocation, offsets);
  if (end === undefined) return undefined;
  return [
    { from, to: from, text: `${CATALOG_SCHEMA}.${VISIBLE}(` },
    { from: end, to: end, text: ')' },
  ];
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
): { sql: string; parsed: RawStatement[]; edits: Edit[] } | Refusal {
  const splices: Splice[] = [];
  let tokens: Token[] | undefined;
  let matches: Map<number, number> | undefined;
  for (const ref of refs) {
    if (ref.kind === 'cast' || ref.kind === 'alias') {
      tokens ??= scanTokens(sql);
      matches ??= parenMatches(tokens);
      const added = ref.kind === 'cast' ? castSplices(tokens, matches, ref, offsets) : aliasSplice(tokens, matches, ref, offsets);
      if (added === undefined) return catalogRefusals.unsafe;
      splices.push(...(Array.isArray(added) ? added : [added]));
      continue;
    }
    const splice = spliceFor(sql, ref, offsets.index(ref.location));
    if (splice === undefined) return catalogRefusals.unsafe;
    splices.push(splice);
  }
  const { text: out, edits: done } = applySplices(sql, splices);
  const parsed = parseSql(out);
  if (!parsed.ok || parsed.statements.length !== statements.length) return catalogRefusals.unsafe;
  const edits: Edits = {
    relations: new Map(refs.filter((r) => r.kind === 'relation').map((r) => [r.location, r.target])),
    names: new Map(refs.filter((r) => r.kind === 'column' || r.kind === 'function').map((r) => [r.location, r.target])),
    casts: new Set(refs.filter((r) => r.kind === 'cast').map((r) => r.location)),
    aliases: new Map(refs.filter((r) => r.kind === 'alias').map((r) => [r.argLocation ?? -1, r.name])),
  };
  const same = parsed.statements.every((s, i) => {
    const expected = edited(statements[i]?.node ?? null, edits);
    return JSON.stringify(edited(s.node, noEdits)) === JSON.stringify(expected);
  });
  return same ? { sql: out, parsed: parsed.statements, edits: done } : catalogRefusals.unsafe;
}

/** The changes the splices must have made to the tree, by parser location. */
interface Edits {
  /** RangeVars whose schema becomes the target. */
  relations: ReadonlyMap<number, string>;
  /** ColumnRefs whose first field, and FuncCalls whose schema, becomes the target. */
  names: ReadonlyMap<number, string>;
  /** TypeCasts wrapped in the visibility stand-in. */
  casts: ReadonlySet<number>;
  /** Output columns (ResTargets) given back their name. */
  aliases: ReadonlyMap<number, string>;
}

const noEdits: Edits = { relations: new Map(), names: new Map(), casts: new Set(), aliases: new Map() };

const sortedKeys = (o: JsonObject): JsonObject => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1))) as JsonObject;

/**
 * A copy of the tree without source locations (the splices shift them), with `edits` applied as
 * the parser would show them.
 */
function edited(value: Json | undefined, edits: Edits): Json {
  if (Array.isArray(value)) return value.map((v) => edited(v, edits));
  const o = obj(value);
  if (o === undefined) return value ?? null;
  const out: JsonObject = {};
  // Keys in order: an added schemaname must land where the parser puts it.
  for (const key of Object.keys(o).sort()) if (key !== 'location') out[key] = edited(o[key], edits);
  const location = typeof o.location === 'number' ? o.location : -1;
  const relation = edits.relations.get(location);
  if (relation !== undefined && typeof o.relname === 'string' && 'relpersistence' in o) {
    out.schemaname = relation;
    return sortedKeys(out);
  }
  const node = nodeOf(value);
  const alias = node?.[0] === 'ResTarget' ? edits.aliases.get(typeof node[1].location === 'number' ? node[1].location : -1) : undefined;
  if (alias !== undefined) {
    const inner = obj(out.ResTarget);
    if (inner !== undefined) out.ResTarget = sortedKeys({ ...inner, name: alias });
    return out;
  }
  if (node === undefined) return out;
  const at = typeof node[1].location === 'number' ? node[1].location : -1;
  if (node[0] === 'TypeCast' && edits.casts.has(castLocation(node[1]) ?? -1)) {
    return { FuncCall: { args: [out], funcformat: 'COERCE_EXPLICIT_CALL', funcname: [{ String: { sval: CATALOG_SCHEMA } }, { String: { sval: VISIBLE } }] } };
  }
  // A column's first field (its schema) or a function's name list (`pg_notify` → its stand-in).
  const named = node[0] === 'ColumnRef' || node[0] === 'FuncCall' ? edits.names.get(at) : undefined;
  if (named !== undefined) {
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
    const ref = facts.catalog.find((r) => (r.kind === 'relation' || r.kind === 'function') && r.schema === null);
    if (ref !== undefined) return catalogRefusals.searchPath(ref.name, ref.kind === 'function' ? 'function' : 'relation');
  }
  if (path.includes('information_schema')) {
    const ref = facts.refs.find((r) => r.kind === 'relation' && r.schema === null && !r.create && informationSchemaRelations.has(r.name));
    if (ref !== undefined) return { ...catalogRefusals.searchPath(ref.name), hint: `write information_schema.${ref.name}` };
  }
  return null;
}
