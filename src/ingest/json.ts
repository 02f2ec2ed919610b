/**
 * JSON (one array of records) and NDJSON (one record per line, or any whitespace between) in
 * constant memory: a scanner cuts the text into top-level elements as it streams, counting
 * lines, and each element is parsed on its own. Objects are records keyed by name (a key first
 * seen later adds a column, NULL in earlier rows); arrays are positional records. Top-level
 * values keep their exact text: numbers are not passed through a double, nested objects and
 * arrays become JSON text (JSONB columns), strings are unescaped, null is NULL.
 */
import { TextDecoder } from 'node:util';
import { type PgError, SqlState } from '../shared/errors.js';
import { located } from './located.js';
import type { ParsedRow, RowReader } from './types.js';

/** Largest single record; beyond it the file is refused so memory stays bounded. */
export const MAX_ELEMENT_CHARS = 32 * 1024 * 1024;

const WS = /[ \t\n\r]*/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERAL = /true|false|null/y;

function malformed(line: number, what: string): PgError {
  return located(SqlState.InvalidTextRepresentation, line, `invalid JSON at line ${line}: ${what}`);
}

function match(re: RegExp, text: string, at: number): number {
  re.lastIndex = at;
  return re.test(text) ? re.lastIndex : -1;
}

function ws(text: string, at: number): number {
  return match(WS, text, at);
}

/** End of the JSON value starting at `at`, or -1 when it is not valid JSON. */
function skipValue(text: string, at: number, depth = 0): number {
  const c = text.charCodeAt(at);
  if (c === 34) return match(STRING, text, at);
  if (c === 123 || c === 91) {
    if (depth > 500) return -1;
    const close = c === 123 ? 125 : 93;
    let i = ws(text, at + 1);
    if (text.charCodeAt(i) === close) return i + 1;
    for (;;) {
      if (c === 123) {
        i = match(STRING, text, i);
        if (i < 0) return -1;
        i = ws(text, i);
        if (text.charCodeAt(i) !== 58) return -1;
        i = ws(text, i + 1);
      }
      i = skipValue(text, i, depth + 1);
      if (i < 0) return -1;
      i = ws(text, i);
      const d = text.charCodeAt(i);
      if (d === close) return i + 1;
      if (d !== 44) return -1;
      i = ws(text, i + 1);
    }
  }
  if (c === 45 || (c >= 48 && c <= 57)) return match(NUMBER, text, at);
  return match(LITERAL, text, at);
}

/** A top-level value as a cell: strings unescaped, null as NULL, everything else as its JSON text. */
function cell(text: string, start: number, end: number): string | null {
  const c = text.charCodeAt(start);
  if (c === 34) return JSON.parse(text.slice(start, end)) as string;
  if (c === 110) return null;
  return text.slice(start, end);
}

/** Parses one element; calls `field` for each key (objects) or position (arrays). */
function parseElement(text: string, line: number, field: (key: string | number, value: string | null) => void): 'object' | 'array' {
  const open = text.charCodeAt(0);
  if (open !== 123 && open !== 91) throw malformed(line, 'a record must be an object or an array');
  const end = skipValue(text, 0);
  if (end < 0 || ws(text, end) !== text.length) throw malformed(line, 'the record is not valid JSON');
  let i = ws(text, 1);
  for (let n = 0; text.charCodeAt(i) !== 125 && text.charCodeAt(i) !== 93; n++) {
    let key: string | number = n;
    if (open === 123) {
      const k = match(STRING, text, i);
      key = JSON.parse(text.slice(i, k)) as string;
      i = ws(text, ws(text, k) + 1);
    }
    const v = skipValue(text, i);
    field(key, cell(text, i, v));
    i = ws(text, v);
    if (text.charCodeAt(i) === 44) i = ws(text, i + 1);
  }
  return open === 123 ? 'object' : 'array';
}

/** Cuts streamed text into top-level elements, with the line each starts on. */
class Scanner {
  private line = 1;
  private pieces: string[] = [];
  private size = 0;
  private startLine = 0;
  private depth = 0;
  private inString = false;
  private escape = false;
  private collecting = false;
  /** JSON: 0 before `[`, 1 inside the array, 2 after `]`. */
  private phase = 0;

  constructor(private readonly array: boolean) {}

  feed(text: string, out: (element: string, line: number) => void): void {
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.collecting) {
        if (this.inString) {
          if (this.escape) this.escape = false;
          else if (c === 92) this.escape = true;
          else if (c === 34) this.inString = false;
        } else if (c === 34) this.inString = true;
        else if (c === 123 || c === 91) this.depth++;
        else if (c === 125 || c === 93) {
          if (--this.depth === 0) {
            this.pieces.push(text.slice(from, i + 1));
            out(this.pieces.join(''), this.startLine);
            this.pieces = [];
            this.size = 0;
            this.collecting = false;
          }
        }
        if (c === 10) this.line++;
        continue;
      }
      if (c === 10) this.line++;
      if (c === 32 || c === 9 || c === 10 || c === 13 || c === 0xfeff) continue;
      if (this.array && this.phase === 0) {
        if (c !== 91) throw malformed(this.line, 'a JSON file must hold one array of records');
        this.phase = 1;
        continue;
      }
      if (this.array && this.phase === 2) throw malformed(this.line, 'text after the end of the array');
      if (this.array && (c === 44 || c === 93)) {
        if (c === 93) this.phase = 2;
        continue;
      }
      if (c !== 123 && c !== 91) throw malformed(this.line, 'a record must be an object or an array');
      this.collecting = true;
      this.depth = 1;
      this.startLine = this.line;
      from = i;
    }
    if (this.collecting) {
      const rest = text.slice(from);
      this.size += rest.length;
      if (this.size > MAX_ELEMENT_CHARS) throw malformed(this.startLine, `a record is longer than ${MAX_ELEMENT_CHARS} characters`);
      this.pieces.push(rest);
    }
  }

  end(): void {
    if (this.collecting || (this.array && this.phase !== 2)) throw malformed(this.line, 'the file ends inside a record');
  }
}

/** Rows of JSON / NDJSON text (valid UTF-8 chunks). */
export function jsonReader(source: AsyncIterable<Buffer>, array: boolean): RowReader & { names: string[] } {
  const names: string[] = [];
  const index = new Map<string, number>();
  let kind: 'object' | 'array' | undefined;
  return {
    names,
    unit: 'line',
    async *rows() {
      const scanner = new Scanner(array);
      const decoder = new TextDecoder();
      let batch: ParsedRow[] = [];
      const onElement = (element: string, line: number) => {
        const values: (string | null)[] = [];
        const got = parseElement(element, line, (key, value) => {
          let at = typeof key === 'number' ? key : index.get(key);
          if (at === undefined) {
            at = names.length;
            index.set(key as string, at);
            names.push(key as string);
          }
          while (values.length < at) values.push(null);
          values[at] = value;
        });
        if (kind !== undefined && got !== kind) throw malformed(line, `this record is an ${got}, the ones before were ${kind}s`);
        kind = got;
        batch.push({ line, values });
      };
      for await (const chunk of source) {
        scanner.feed(decoder.decode(chunk, { stream: true }), onElement);
        if (batch.length) {
          yield batch;
          batch = [];
        }
      }
      scanner.feed(decoder.decode(), onElement);
      scanner.end();
      if (batch.length) yield batch;
    },
  };
}
