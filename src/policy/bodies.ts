// Opaque bodies: CREATE FUNCTION / PROCEDURE and DO. Their static statements are checked like
// top-level ones: a LANGUAGE sql body (`AS $$…$$`) is parsed as SQL, a `BEGIN ATOMIC … END`
// body is already part of the tree, and PL/pgSQL is compiled with the PL/pgSQL parser, every
// embedded query (PLpgSQL_expr) then checked as SQL.
//
// Dynamic SQL (`EXECUTE 'text'`, `EXECUTE format(…)`) cannot be known before it runs: it is left
// to the role wall. Each user is a Postgres role owning only its repos, so whatever a function
// runs, it runs with at most its caller's (or, SECURITY DEFINER, its owner's) privileges.
import { arr, defElems, fieldsOf, nameList, obj, str, stringConst, stringNode, type Json, type JsonObject } from './json.js';
import { scanTokens } from './lexer.js';
import { splitIdentifiers } from './names.js';
import { parsePlpgsql } from './parse.js';
import { refusals } from './refusals.js';
import { functionSetting } from './rules.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

/** The search_path a function body runs with (its SET clause), refusing role changes. */
function functionOptions(w: Walker, options: Json | undefined): string[] | null {
  let path: string[] | null = null;
  for (const item of arr(options)) {
    const d = fieldsOf(item, 'DefElem');
    const set = d !== undefined && d.defname === 'set' ? fieldsOf(d.arg, 'VariableSetStmt') : undefined;
    if (set === undefined) continue;
    const refusal = functionSetting(set);
    if (refusal !== undefined) w.refuse(refusal);
    if (str(set.name)?.toLowerCase() === 'search_path' && set.kind === 'VAR_SET_VALUE') {
      path = arr(set.args).flatMap((a) => {
        const schema = stringConst(a);
        return schema === undefined ? [] : [schema];
      });
      w.facts.functionPaths.push(path);
    }
  }
  return path;
}

function bodyText(value: Json | undefined): string | undefined {
  return stringNode(value) ?? stringNode(arr(fieldsOf(value, 'List')?.items)[0]);
}

function createFunction(w: Walker, n: JsonObject, scope: Scope): void {
  w.qualified('object', nameList(n.funcname) ?? [], 'own', { create: true });
  const options = defElems(n.options);
  const path = functionOptions(w, n.options) ?? w.ctx.path;
  const language = stringNode(options.get('language'))?.toLowerCase() ?? (n.sql_body === undefined ? undefined : 'sql');
  const body = bodyText(options.get('as'));
  if (language !== undefined && language !== 'sql' && language !== 'plpgsql') {
    w.refuse(refusals.otherLanguage(language));
  } else if (body !== undefined && language === 'sql') {
    w.facts.bodies.push('sql');
    w.ctx.nested(w, body, path);
  } else if (body !== undefined && language === 'plpgsql') {
    w.facts.bodies.push('plpgsql');
    plpgsql(w, body, path);
  }
  // Parameters, return type and a BEGIN ATOMIC body (bound at creation, with the session's path).
  w.rest(n, ['funcname', 'options'], 'read', scope);
}

function alterFunction(w: Walker, n: JsonObject, scope: Scope): void {
  const func = fieldsOf(n.func, 'ObjectWithArgs');
  w.qualified('object', nameList(func?.objname) ?? [], 'own');
  if (func !== undefined) w.rest(func, ['objname'], 'read', scope);
  functionOptions(w, n.actions);
}

function doBlock(w: Walker, n: JsonObject): void {
  const options = defElems(n.args);
  const language = stringNode(options.get('language'))?.toLowerCase() ?? 'plpgsql';
  const body = stringNode(options.get('as'));
  if (language !== 'plpgsql') {
    w.refuse(refusals.otherLanguage(language));
  } else if (body !== undefined) {
    w.facts.bodies.push('do');
    plpgsql(w, body, w.ctx.path);
  }
}

/**
 * Checks a PL/pgSQL body. The statement text goes to the PL/pgSQL compiler (it needs the whole
 * CREATE FUNCTION / DO to know parameters); when that stub compiler rejects a body Postgres
 * might accept (it cannot look up composite types), the body is scanned for qualified names
 * instead, and Postgres itself reports real errors.
 */
function plpgsql(w: Walker, body: string, path: string[] | null): void {
  let tree: Json;
  try {
    tree = parsePlpgsql(w.ctx.text);
  } catch (_err: unknown) {
    scanQualifiedNames(w, body);
    return;
  }
  visitPlpgsql(w, tree, path);
}

function visitPlpgsql(w: Walker, value: Json, path: string[] | null): void {
  if (Array.isArray(value)) {
    for (const item of value) visitPlpgsql(w, item, path);
    return;
  }
  const o = obj(value);
  if (o === undefined) return;
  const expr = obj(o.PLpgSQL_expr);
  if (expr !== undefined) {
    const query = str(expr.query);
    if (query !== undefined) w.ctx.nested(w, expressionSql(query, typeof expr.parseMode === 'number' ? expr.parseMode : 0), path);
    return;
  }
  const type = obj(o.PLpgSQL_type);
  if (type !== undefined) plpgsqlType(w, str(type.typname) ?? '');
  for (const key in o) visitPlpgsql(w, o[key] ?? null, path);
}

/**
 * SQL for a PLpgSQL_expr by its raw parse mode: 0 a statement, 1 a type name, 2 an expression,
 * 3–5 an assignment `target := expr` (checked as `SELECT target, expr`: a subscript in the
 * target is an expression too).
 */
export function expressionSql(query: string, mode: number): string {
  if (mode === 0) return query;
  if (mode === 1) return `SELECT NULL::${query}`;
  if (mode >= 3) {
    let depth = 0;
    for (const t of scanTokens(query)) {
      if (t.text === '(' || t.text === '[') depth++;
      else if (t.text === ')' || t.text === ']') depth--;
      else if (depth === 0 && (t.text === ':=' || t.text === '=' || /^=[-+]+$/.test(t.text))) {
        return `SELECT ${query.slice(0, t.start)}, ${query.slice(t.start + (t.text === ':=' ? 2 : 1))}`;
      }
    }
  }
  return `SELECT ${query}`;
}

// Variable types as the compiler prints them: `"bob/x".t%ROWTYPE`, `"bob/x".t.c%TYPE`, `int`.
function plpgsqlType(w: Walker, typname: string): void {
  const suffix = /%(ROW)?TYPE$/i.exec(typname);
  const names = splitIdentifiers(suffix === null ? typname : typname.slice(0, suffix.index), '.', true);
  if (names === undefined) return;
  if (suffix === null) w.qualifiedUse(names);
  else if (suffix[1] !== undefined) w.qualified('relation', names, 'read');
  // `v%TYPE` and `rec.f%TYPE` name variables; only a schema-qualified column names a table.
  else if (names.length >= 3) w.qualified('relation', names.slice(0, -1), 'read');
}

/** Fallback for a body the compiler rejected: every `"owner/repo".` qualifier must be readable. */
function scanQualifiedNames(w: Walker, body: string): void {
  const tokens = scanTokens(body);
  tokens.forEach((t, i) => {
    if (t.kind === 'qident' && t.text.includes('/') && tokens[i + 1]?.text === '.') {
      w.ref({ kind: 'schema', schema: t.text, name: '', need: 'read', create: false, temp: false });
    }
  });
}

export const bodyHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['CreateFunctionStmt', { handle: createFunction, command: 'CREATE FUNCTION' }],
  ['AlterFunctionStmt', { handle: alterFunction, command: 'ALTER FUNCTION' }],
  ['DoStmt', { handle: doBlock, command: 'DO' }],
];
