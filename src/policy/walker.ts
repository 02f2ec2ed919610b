// The generic tree walk. Every object and array of the parser's JSON is visited; every RangeVar
// (wrapped or not) becomes a relation reference needing the access of the field it was found
// under, which statement handlers set for the fields that name what they change. Everything else
// is read. Statement types without a handler are refused: what the walk does not know, it does
// not let through.
import { SqlState } from '../shared/errors.js';
import type { NameRef, Need, Refusal, StatementFacts } from './facts.js';
import { obj, nodeOf, str, type Json, type JsonObject } from './json.js';
import type { Offsets } from './offsets.js';

/** CTE names visible at a point of the tree: they shadow unqualified relation names. */
export type Scope = ReadonlySet<string>;
export const noScope: Scope = new Set<string>();

export type Handler = (w: Walker, n: JsonObject, scope: Scope) => void;

export interface HandlerEntry {
  handle: Handler;
  /** Command name for messages, for statement nodes (`INSERT`); expression nodes have none. */
  command?: string;
}

export interface WalkContext {
  handlers: ReadonlyMap<string, HandlerEntry>;
  /** Node types that are refused outright, with the refusal (service rules). */
  forbidden: ReadonlyMap<string, Refusal>;
  /** Offsets into the top-level query string; null inside function bodies (no positions). */
  offsets: Offsets | null;
  /** search_path a function body runs with, from its SET clause. */
  path: string[] | null;
  /** True inside function bodies and DO blocks: settings do not change the session. */
  body: boolean;
  /** The full text being walked, for handlers that need source text (function bodies). */
  text: string;
  /** Analyses SQL found in a body (function, DO) into these facts. */
  nested(w: Walker, sql: string, path: string[] | null): void;
  /**
   * A relation read (`isTarget`: the one a statement acts on); the private catalogs record the
   * catalog relations to redirect here (`catalog-refs.ts`).
   */
  readRelation(w: Walker, rv: JsonObject, schema: string | null, name: string, isTarget: boolean): void;
}

/**
 * Struct fields the parser writes without a type wrapper, by field name (the rest are known by
 * their shape: RangeVar has relname + relpersistence, TypeName names + typemod).
 */
const inlineFields = new Map([
  ['larg', 'SelectStmt'],
  ['rarg', 'SelectStmt'],
  ['funccall', 'FuncCall'],
  ['collClause', 'CollateClause'],
  ['func', 'ObjectWithArgs'],
  ['opername', 'ObjectWithArgs'],
]);

function inlineType(o: JsonObject, field: string | undefined): string | undefined {
  const byField = field === undefined ? undefined : inlineFields.get(field);
  if (byField !== undefined) return byField;
  if (typeof o.relname === 'string' && 'relpersistence' in o) return 'RangeVar';
  if (Array.isArray(o.names) && typeof o.typemod === 'number') return 'TypeName';
  if (Array.isArray(o.objname)) return 'ObjectWithArgs';
  return undefined;
}

/** Value types of the parser's JSON that are leaves for the walk. */
const leaves = new Set(['String', 'Integer', 'Float', 'Boolean', 'BitString', 'A_Const', 'ParamRef', 'A_Star', 'SQLValueFunction']);

/** Walks one statement's tree into its facts; handlers call back into it. */
export class Walker {
  /** The innermost statement's command, for messages. */
  command: string;

  constructor(
    readonly facts: StatementFacts,
    readonly ctx: WalkContext,
  ) {
    this.command = facts.command;
  }

  /**
   * Visits any JSON value; `need` is the access RangeVars found under it require. `field` is the
   * key it was found under, which tells the type of structs the parser inlines unwrapped.
   */
  visit(value: Json | undefined, need: Need, scope: Scope, field?: string): void {
    if (Array.isArray(value)) {
      for (const item of value) this.visit(item, need, scope);
      return;
    }
    const o = obj(value);
    if (o === undefined) return;
    const node = nodeOf(value);
    if (node !== undefined) this.dispatch(node[0], node[1], need, scope);
    else this.dispatch(inlineType(o, field), o, need, scope);
  }

  private dispatch(type: string | undefined, fields: JsonObject, need: Need, scope: Scope): void {
    if (type === undefined) {
      this.rest(fields, [], need, scope);
      return;
    }
    if (type === 'RangeVar') {
      this.relation(fields, need, scope);
      return;
    }
    if (leaves.has(type)) return;
    const refusal = this.ctx.forbidden.get(type);
    if (refusal !== undefined) {
      this.refuse(refusal);
      return;
    }
    const entry = this.ctx.handlers.get(type);
    if (entry !== undefined) {
      const outer = this.command;
      if (entry.command !== undefined) this.command = entry.command;
      entry.handle(this, fields, scope);
      this.command = outer;
      return;
    }
    if (type.endsWith('Stmt')) {
      this.refuse({ code: SqlState.FeatureNotSupported, message: `${type.slice(0, -4)} statements are not supported by repobase` });
      return;
    }
    this.rest(fields, [], need, scope);
  }

  /** Visits every field of a node except those a handler dealt with itself. */
  rest(n: JsonObject, skip: readonly string[], need: Need, scope: Scope): void {
    for (const key in n) {
      if (!skip.includes(key)) this.visit(n[key], need, scope, key);
    }
  }

  /**
   * A RangeVar. `target`: a DML/DDL target, which is never a CTE; `create`: names a relation
   * being created (temp ones live in pg_temp).
   */
  relation(rv: JsonObject, need: Need, scope: Scope, how: { target?: boolean; create?: boolean } = {}): void {
    const name = str(rv.relname) ?? '';
    const schema = str(rv.schemaname) ?? null;
    if (how.target !== true && how.create !== true && schema === null && scope.has(name)) return;
    const create = how.create === true;
    if (need === 'read' && !create) this.ctx.readRelation(this, rv, schema, name, how.target === true);
    this.ref({ kind: 'relation', schema, name, need, create, temp: create && rv.relpersistence === 't', location: rv.location });
  }

  /** A qualified name given as a list (`{schema}.{name}`; a leading catalog is ignored). */
  qualified(kind: NameRef['kind'], names: readonly string[], need: Need, how: { create?: boolean; location?: Json | undefined } = {}): void {
    const name = names[names.length - 1] ?? '';
    const schema = names.length >= 2 ? (names[names.length - 2] ?? null) : null;
    this.ref({ kind, schema, name, need, create: how.create === true, temp: false, location: how.location });
  }

  /**
   * A reference that only matters when schema-qualified (calls, types, operators). Built-ins
   * (`pg_catalog.int4`, `OPERATOR(pg_catalog.~)`) are always usable and not recorded: psql and
   * the parser itself write them everywhere.
   */
  qualifiedUse(names: readonly string[] | undefined, location?: Json): void {
    if (names !== undefined && names.length >= 2 && names[names.length - 2] !== 'pg_catalog') {
      this.qualified('object', names, 'read', { location });
    }
  }

  /** Records a reference as found here (command, position, body search_path). */
  ref(r: { kind: NameRef['kind']; schema: string | null; name: string; need: Need; create: boolean; temp: boolean; location?: Json | undefined }): void {
    this.facts.refs.push({
      kind: r.kind,
      schema: r.schema,
      name: r.name,
      need: r.need,
      create: r.create,
      temp: r.temp,
      command: this.command,
      position: this.position(r.location),
      path: this.ctx.path,
    });
  }

  /** Keeps the first refusal: that is the one the user sees. */
  refuse(refusal: Refusal): void {
    this.facts.refusal ??= refusal;
  }

  /** 1-based character position of a parser location; null inside bodies. */
  position(location: Json | undefined): number | null {
    if (this.ctx.offsets === null || typeof location !== 'number' || location < 0) return null;
    return this.ctx.offsets.position(location);
  }
}
