// The two WASM parsers, loaded once: libpg-query for SQL (the server's own grammar) and
// @libpg-query/parser for PL/pgSQL bodies, which the pinned libpg-query build does not include.
import { loadModule, parseSync, SqlError } from 'libpg-query';
import { arr, obj, type Json } from './json.js';

export interface RawStatement {
  node: Json;
  /** UTF-8 byte offsets of the statement's text, as the parser reports them. */
  start: number;
  /** Undefined for "to the end of the string". */
  length: number | undefined;
}

export type Parsed =
  | { ok: true; statements: RawStatement[] }
  | { ok: false; message: string; /** 0-based character index. */ cursor: number };

let plpgsql: ((sql: string) => unknown) | undefined;

/** Loads both parsers; call once before parsing (idempotent). */
export async function loadParsers(): Promise<void> {
  await Promise.all([
    loadModule(),
    (async () => {
      if (plpgsql !== undefined) return;
      // Imported lazily: the module pulls in a 5 MB protobuf table at import time.
      const mod = await import('@libpg-query/parser');
      await mod.loadModule();
      plpgsql = mod.parsePlPgSQLSync;
    })(),
  ]);
}

/** Parses SQL text into its statements, or the parser's error. */
export function parseSql(sql: string): Parsed {
  let tree: unknown;
  try {
    tree = parseSync(sql);
  } catch (err: unknown) {
    if (err instanceof SqlError) return { ok: false, message: err.message, cursor: err.sqlDetails?.cursorPosition ?? 0 };
    throw err;
  }
  // The parser's output is JSON.parse'd text: Json by construction.
  const stmts = arr(obj(tree as Json)?.stmts);
  return {
    ok: true,
    statements: stmts.map((raw) => {
      const o = obj(raw) ?? {};
      const start = typeof o.stmt_location === 'number' ? o.stmt_location : 0;
      const length = typeof o.stmt_len === 'number' && o.stmt_len > 0 ? o.stmt_len : undefined;
      return { node: o.stmt ?? null, start, length };
    }),
  };
}

/**
 * Compiles the PL/pgSQL of one CREATE FUNCTION or DO statement into its JSON tree. Throws when it
 * does not compile; the error text is often lost by the library (it JSON-parses error strings).
 */
export function parsePlpgsql(statement: string): Json {
  if (plpgsql === undefined) throw new Error('PL/pgSQL parser not loaded');
  const tree: unknown = plpgsql(statement);
  return tree as Json;
}
