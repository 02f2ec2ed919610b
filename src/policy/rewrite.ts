// Seed rule: a column type change converts by itself. `ALTER TABLE … ALTER COLUMN c [SET DATA]
// TYPE t` without USING runs as if `USING "c"::t` had been written, so a text column of digits
// becomes BIGINT instead of failing for want of an implicit cast. An explicit USING is untouched.
//
// The clause is spliced into the original text after the subcommand (the parser gives where
// the type starts; a small tokenizer finds where the subcommand ends), so comments and
// formatting elsewhere survive. The result is re-parsed and must give the original tree plus
// exactly the added USING expressions, or the string is left as it was.
import { applySplices, type Edit, type Splice } from './splices.js';
import { arr, fieldsOf, obj, str, type Json, type JsonObject } from './json.js';
import { scanTokens } from './lexer.js';
import { quoteIdent } from './names.js';
import type { Offsets } from './offsets.js';
import { parseSql } from './parse.js';

export interface StatementText {
  node: Json;
  /** UTF-16 indexes of the statement in the query string. */
  start: number;
  end: number;
}

/** Type-change subcommands without USING: the place the seed rule applies to. */
function typeChanges(node: Json): JsonObject[] {
  const alter = fieldsOf(node, 'AlterTableStmt');
  // USING exists only for tables (not composite types, not foreign tables).
  if (alter === undefined || str(alter.objtype) !== 'OBJECT_TABLE') return [];
  return arr(alter.cmds).flatMap((item) => {
    const cmd = fieldsOf(item, 'AlterTableCmd');
    const def = fieldsOf(cmd?.def, 'ColumnDef');
    return cmd !== undefined && str(cmd.subtype) === 'AT_AlterColumnType' && def !== undefined && def.raw_default === undefined ? [cmd] : [];
  });
}

function spliceFor(sql: string, cmd: JsonObject, end: number, offsets: Offsets): Splice | undefined {
  const def = fieldsOf(cmd.def, 'ColumnDef');
  const typeName = obj(def?.typeName);
  const column = str(cmd.name);
  if (typeName === undefined || column === undefined || typeof typeName.location !== 'number' || typeName.location < 0) return undefined;
  const typeStart = offsets.index(typeName.location);
  const collate = obj(def?.collClause)?.location;
  const collateAt = typeof collate === 'number' ? offsets.index(collate) : Infinity;
  let depth = 0;
  let clauseEnd = typeStart;
  let typeEnd = typeStart;
  for (const t of scanTokens(sql, typeStart, end)) {
    if (depth === 0 && (t.text === ',' || t.text === ';')) break;
    if (t.text === '(' || t.text === '[') depth++;
    else if (t.text === ')' || t.text === ']') depth--;
    clauseEnd = t.end;
    if (t.start < collateAt) typeEnd = t.end;
  }
  if (typeEnd <= typeStart) return undefined;
  // The type as written; unquoted words fold to lower case in Postgres anyway (BIGINT is bigint).
  const written = sql.slice(typeStart, typeEnd);
  const type = /^[A-Za-z0-9_\s,()[\]]+$/.test(written) ? written.toLowerCase() : written;
  return { from: clauseEnd, to: clauseEnd, text: ` USING ${quoteIdent(column)}::${type}` };
}

/** The query string with the seed rule applied, or null when it does not apply (or not safely). */
export function seedRewrite(sql: string, statements: readonly StatementText[], offsets: Offsets): { sql: string; edits: Edit[] } | null {
  const splices: Splice[] = [];
  for (const s of statements) {
    for (const cmd of typeChanges(s.node)) {
      const splice = spliceFor(sql, cmd, s.end, offsets);
      if (splice === undefined) return null;
      splices.push(splice);
    }
  }
  if (splices.length === 0) return null;
  const { text: out, edits } = applySplices(sql, splices);
  return verified(statements, out) ? { sql: out, edits } : null;
}

/** The rewritten string parses to the original statements plus the USING casts, nothing else. */
function verified(original: readonly StatementText[], rewritten: string): boolean {
  const parsed = parseSql(rewritten);
  if (!parsed.ok || parsed.statements.length !== original.length) return false;
  return parsed.statements.every((s, i) => {
    const before = original[i]?.node ?? null;
    const added = new Set(typeChanges(before).map((cmd) => arr(fieldsOf(before, 'AlterTableStmt')?.cmds).findIndex((c) => fieldsOf(c, 'AlterTableCmd') === cmd)));
    const cmds = arr(fieldsOf(s.node, 'AlterTableStmt')?.cmds);
    for (const index of added) {
      const cmd = fieldsOf(cmds[index], 'AlterTableCmd');
      const def = fieldsOf(cmd?.def, 'ColumnDef');
      const cast = fieldsOf(def?.raw_default, 'TypeCast');
      if (def === undefined || cast === undefined || !isColumn(cast.arg, str(cmd?.name))) return false;
      if (JSON.stringify(strip(cast.typeName)) !== JSON.stringify(strip(def.typeName))) return false;
      delete def.raw_default;
    }
    return JSON.stringify(strip(s.node)) === JSON.stringify(strip(before));
  });
}

function isColumn(value: Json | undefined, name: string | undefined): boolean {
  const fields = arr(fieldsOf(value, 'ColumnRef')?.fields);
  return fields.length === 1 && str(fieldsOf(fields[0], 'String')?.sval) === name;
}

/** The tree without source locations, which the splice shifts. */
function strip(value: Json | undefined): Json {
  if (Array.isArray(value)) return value.map(strip);
  const o = obj(value);
  if (o === undefined) return value ?? null;
  const out: JsonObject = {};
  for (const key in o) if (key !== 'location') out[key] = strip(o[key]);
  return out;
}
