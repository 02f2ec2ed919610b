// Typed access to the parser's JSON tree. The walker is generic, so it sees the tree as plain
// JSON; these helpers keep the narrowing in one place.

export type Json = string | number | boolean | null | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

/** The value as an object, or undefined. */
export function obj(value: Json | undefined): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

/** The value as an array (a missing list is empty). */
export function arr(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}

/** The value as a string, or undefined. */
export function str(value: Json | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A wrapped node `{ "SelectStmt": {…} }` as [type, fields]; node types start upper-case. */
export function nodeOf(value: Json | undefined): [string, JsonObject] | undefined {
  const o = obj(value);
  if (o === undefined) return undefined;
  const keys = Object.keys(o);
  if (keys.length !== 1) return undefined;
  const key = keys[0] as string;
  const code = key.charCodeAt(0);
  if (code < 65 || code > 90) return undefined;
  const fields = obj(o[key]);
  return fields === undefined ? undefined : [key, fields];
}

/** The fields of a node of the given type, whether wrapped or not. */
export function fieldsOf(value: Json | undefined, type: string): JsonObject | undefined {
  const node = nodeOf(value);
  if (node !== undefined) return node[0] === type ? node[1] : undefined;
  return obj(value);
}

/** A String node's text (`{String:{sval}}`; an empty string has no sval). */
export function stringNode(value: Json | undefined): string | undefined {
  const node = nodeOf(value);
  return node?.[0] === 'String' ? (str(node[1].sval) ?? '') : undefined;
}

/** A list of String nodes (a qualified name) as strings; undefined if any item is not a String. */
export function nameList(value: Json | undefined): string[] | undefined {
  const items = Array.isArray(value) ? value : arr(fieldsOf(value, 'List')?.items);
  const out: string[] = [];
  for (const item of items) {
    const s = stringNode(item);
    if (s === undefined) return undefined;
    out.push(s);
  }
  return out;
}

/** The string value of an A_Const string literal, or undefined. */
export function stringConst(value: Json | undefined): string | undefined {
  const c = nodeOf(value);
  if (c === undefined || c[0] !== 'A_Const') return undefined;
  const sval = obj(c[1].sval);
  return sval === undefined ? undefined : (str(sval.sval) ?? '');
}

/** The value of an A_Const boolean (or a string Postgres reads as one), or undefined. */
export function boolConst(value: Json | undefined): boolean | undefined {
  const c = nodeOf(value);
  if (c === undefined || c[0] !== 'A_Const') return undefined;
  const b = obj(c[1].boolval);
  if (b !== undefined) return b.boolval === true;
  const s = stringConst(value)?.trim().toLowerCase();
  if (s === undefined) return undefined;
  if (['t', 'true', 'on', 'yes', 'y', '1'].includes(s)) return true;
  if (['f', 'false', 'off', 'no', 'n', '0'].includes(s)) return false;
  return undefined;
}

/** A DefElem list as name → arg. */
export function defElems(value: Json | undefined): Map<string, Json | undefined> {
  const out = new Map<string, Json | undefined>();
  for (const item of arr(value)) {
    const d = fieldsOf(item, 'DefElem');
    const name = str(d?.defname);
    if (d !== undefined && name !== undefined) out.set(name, d.arg);
  }
  return out;
}
