// Queries and row changes: which relation of each statement is written, which are read.
// TRUNCATE, VACUUM/ANALYZE and LOCK in write modes change more than rows: see the comments.
import type { Need } from './facts.js';
import { arr, fieldsOf, obj, str, type Json, type JsonObject } from './json.js';
import { refusals } from './refusals.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

/**
 * Walks a WITH clause and returns the scope its CTE names are visible in. A non-recursive CTE
 * sees the ones before it; WITH RECURSIVE makes all of them visible everywhere in the clause.
 */
export function withClause(w: Walker, value: Json | undefined, scope: Scope): Scope {
  const wc = obj(value);
  if (wc === undefined) return scope;
  const ctes = arr(wc.ctes).flatMap((c): JsonObject[] => {
    const cte = fieldsOf(c, 'CommonTableExpr');
    return cte === undefined ? [] : [cte];
  });
  const extend = (base: Scope, names: string[]): Scope => new Set([...base, ...names]);
  if (wc.recursive === true) {
    const all = extend(scope, ctes.map((c) => str(c.ctename) ?? ''));
    for (const cte of ctes) w.rest(cte, ['ctename'], 'read', all);
    return all;
  }
  let current = scope;
  for (const cte of ctes) {
    w.rest(cte, ['ctename'], 'read', current);
    current = extend(current, [str(cte.ctename) ?? '']);
  }
  return current;
}

/** RangeVars in a list, each a target needing `need` (never a CTE). */
export function targets(w: Walker, list: Json | undefined, need: Need, scope: Scope): void {
  for (const item of arr(list)) {
    const rv = fieldsOf(item, 'RangeVar');
    if (rv !== undefined) w.relation(rv, need, scope, { target: true });
  }
}

/** One RangeVar field as a target. */
export function target(w: Walker, value: Json | undefined, need: Need, scope: Scope): void {
  const rv = fieldsOf(value, 'RangeVar');
  if (rv !== undefined) w.relation(rv, need, scope, { target: true });
}

function select(w: Walker, n: JsonObject, scope: Scope): void {
  const inner = withClause(w, n.withClause, scope);
  const into = obj(n.intoClause);
  if (into !== undefined) {
    const rel = obj(into.rel);
    if (rel !== undefined) w.relation(rel, 'own', inner, { create: true });
    w.rest(into, ['rel'], 'read', inner);
  }
  // FOR UPDATE/SHARE locks rows, which Postgres allows only with UPDATE (or DELETE) privilege.
  const locks = arr(n.lockingClause).length > 0;
  w.visit(n.fromClause, locks ? 'write' : 'read', inner);
  // lockingClause names FROM items (often aliases), not relations.
  w.rest(n, ['withClause', 'intoClause', 'fromClause', 'lockingClause'], 'read', inner);
}

function modify(w: Walker, n: JsonObject, scope: Scope): void {
  const inner = withClause(w, n.withClause, scope);
  target(w, n.relation, 'write', inner);
  w.rest(n, ['withClause', 'relation'], 'read', inner);
}

function copy(w: Walker, n: JsonObject, scope: Scope): void {
  if (str(n.filename) !== undefined || n.is_program === true) w.refuse(refusals.copyFile);
  target(w, n.relation, n.is_from === true ? 'write' : 'read', scope);
  w.rest(n, ['relation'], 'read', scope);
}

// TRUNCATE is owner-only: collaborators are granted INSERT, UPDATE and DELETE, not TRUNCATE
// (it ignores row-level triggers and cannot be undone by other writers' expectations); a
// writer empties a table with DELETE.
function truncate(w: Walker, n: JsonObject, scope: Scope): void {
  targets(w, n.relations, 'own', scope);
  w.rest(n, ['relations'], 'read', scope);
}

// ACCESS SHARE (mode 1) is what SELECT takes; any stronger lock needs a write privilege.
function lock(w: Walker, n: JsonObject, scope: Scope): void {
  targets(w, n.relations, n.mode === 1 ? 'read' : 'write', scope);
}

// VACUUM and ANALYZE of a named table need ownership (or MAINTAIN, never granted here); a bare
// VACUUM processes only what the role owns.
function vacuum(w: Walker, n: JsonObject, scope: Scope): void {
  for (const item of arr(n.rels)) {
    const vr = fieldsOf(item, 'VacuumRelation');
    if (vr !== undefined) target(w, vr.relation, 'own', scope);
  }
  w.rest(n, ['rels'], 'read', scope);
}

export const dmlHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['SelectStmt', { handle: select, command: 'SELECT' }],
  ['InsertStmt', { handle: modify, command: 'INSERT' }],
  ['UpdateStmt', { handle: modify, command: 'UPDATE' }],
  ['DeleteStmt', { handle: modify, command: 'DELETE' }],
  ['MergeStmt', { handle: modify, command: 'MERGE' }],
  ['CopyStmt', { handle: copy, command: 'COPY' }],
  ['TruncateStmt', { handle: truncate, command: 'TRUNCATE' }],
  ['LockStmt', { handle: lock, command: 'LOCK' }],
  ['VacuumStmt', { handle: vacuum, command: 'VACUUM' }],
];
