// Expression-level nodes that name things in schemas: function calls, types, casts to reg* types
// ('bob/x.t'::regclass names a table; c.oid::regclass shows one), operators, collations,
// operator classes.
import { regTypeOf, regTypes } from './catalog-functions.js';
import { noteRegCast } from './catalog-refs.js';
import { checkFunctionCall, isOidText, regStringRef } from './functions.js';
import { arr, nameList, obj, stringConst, type JsonObject } from './json.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

function funcCall(w: Walker, n: JsonObject, scope: Scope): void {
  const names = nameList(n.funcname) ?? [];
  w.facts.functions.push(names.join('.'));
  w.qualifiedUse(names, n.location);
  checkFunctionCall(w, names, arr(n.args), n.location);
  w.rest(n, ['funcname'], 'read', scope);
}

// A cast to a reg* type of a constant name is a reference to check; of anything else (an oid, a
// column) it shows an object's name, so it goes through the visibility stand-in.
function typeCast(w: Walker, n: JsonObject, scope: Scope): void {
  const typeName = obj(n.typeName);
  const names = nameList(typeName?.names) ?? [];
  const type = names[names.length - 1];
  const kind = type === undefined || names.length > 2 || (names.length === 2 && names[0] !== 'pg_catalog') ? undefined : regTypes.get(type);
  if (type !== undefined && kind !== undefined) {
    const literal = stringConst(n.arg);
    const array = typeName?.arrayBounds !== undefined;
    if (literal !== undefined && !array && !isOidText(literal) && regTypeOf[kind] !== undefined) regStringRef(w, type, literal, 'read', n.location);
    else noteRegCast(w, n, type);
  }
  w.rest(n, [], 'read', scope);
}

// `"bob/x".mytype` needs the repo to be readable; `"bob/x".t.c%TYPE` reads table t.
function typeName(w: Walker, n: JsonObject, scope: Scope): void {
  const names = nameList(n.names) ?? [];
  if (n.pct_type === true) {
    if (names.length >= 2) w.qualified('relation', names.slice(0, -1), 'read', { location: n.location });
  } else {
    w.qualifiedUse(names, n.location);
  }
  w.rest(n, ['names'], 'read', scope);
}

function qualifiedField(field: string): HandlerEntry {
  return {
    handle: (w, n, scope) => {
      w.qualifiedUse(nameList(n[field]), n.location);
      w.rest(n, [field], 'read', scope);
    },
  };
}

function indexElem(w: Walker, n: JsonObject, scope: Scope): void {
  w.qualifiedUse(nameList(n.opclass));
  w.qualifiedUse(nameList(n.collation));
  w.rest(n, ['opclass', 'collation'], 'read', scope);
}

// A sub-select in FROM is a new query level: its relations are read even when the outer query
// locks rows (FOR UPDATE applies to the outer level's tables).
function rangeSubselect(w: Walker, n: JsonObject, scope: Scope): void {
  w.rest(n, [], 'read', scope);
}

function objectWithArgs(w: Walker, n: JsonObject, scope: Scope): void {
  w.qualifiedUse(nameList(n.objname));
  w.rest(n, ['objname'], 'read', scope);
}

export const expressionHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['FuncCall', { handle: funcCall }],
  ['TypeCast', { handle: typeCast }],
  ['TypeName', { handle: typeName }],
  ['A_Expr', qualifiedField('name')],
  ['CollateClause', qualifiedField('collname')],
  ['RangeTableSample', qualifiedField('method')],
  ['IndexElem', { handle: indexElem }],
  ['ObjectWithArgs', { handle: objectWithArgs }],
  ['RangeSubselect', { handle: rangeSubselect }],
];
