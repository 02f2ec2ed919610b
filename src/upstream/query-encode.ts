/**
 * Values of a query result, from the text Postgres printed to JSON text (DESIGN.md §3): numbers
 * with exactly the digits Postgres printed (written raw, never through a float), booleans,
 * NULL, embedded json/jsonb, arrays as arrays, everything else as its text form.
 */
import type { ValueEncoding } from './query-types.js';

/** A JSON number as RFC 8259 spells it; Postgres' `NaN`, `Infinity`, `-Infinity` are not. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** JSON text of one value (`null` for SQL NULL). */
export function encodeValue(text: string | null, encoding: ValueEncoding): string {
  if (text === null) return 'null';
  switch (encoding.kind) {
    case 'number':
      return JSON_NUMBER.test(text) ? text : JSON.stringify(text);
    case 'bool':
      return text === 't' ? 'true' : text === 'f' ? 'false' : JSON.stringify(text);
    case 'json':
      return text;
    case 'text':
      return JSON.stringify(text);
    case 'array':
      return encodeArray(text, encoding.delimiter, encoding.element);
    default:
      return assertNever(encoding);
  }
}

/** JSON text of one row: `[v1,v2,…]`. */
export function encodeRow(row: readonly (string | null)[], encodings: readonly ValueEncoding[]): string {
  let out = '[';
  for (let i = 0; i < row.length; i++) {
    if (i > 0) out += ',';
    out += encodeValue(row[i] ?? null, encodings[i] ?? TEXT);
  }
  return out + ']';
}

const TEXT: ValueEncoding = { kind: 'text' };

/**
 * Postgres array output → JSON array. Handles nesting (`{{1,2},{3,4}}`), quoting with backslash
 * escapes, unquoted `NULL`, the type's delimiter (`;` for box) and a leading dimension
 * decoration (`[0:1]={7,8}`, printed when a lower bound is not 1; the bounds are dropped).
 * Text that is not an array literal is returned as a JSON string rather than guessed at.
 */
export function encodeArray(text: string, delimiter: string, element: ValueEncoding): string {
  let i = 0;
  if (text.startsWith('[')) {
    const eq = text.indexOf('=');
    if (eq < 0) return JSON.stringify(text);
    i = eq + 1;
  }
  const parts: string[] = [];
  const parseLevel = (): boolean => {
    if (text[i] !== '{') return false;
    i++;
    parts.push('[');
    let first = true;
    while (i < text.length) {
      const c = text[i];
      if (c === '}') {
        i++;
        parts.push(']');
        return true;
      }
      if (!first) {
        if (c !== delimiter) return false;
        i++;
        parts.push(',');
      }
      first = false;
      if (text[i] === '{') {
        if (!parseLevel()) return false;
      } else if (text[i] === '"') {
        let value = '';
        i++;
        while (i < text.length && text[i] !== '"') {
          if (text[i] === '\\') i++;
          value += text[i] ?? '';
          i++;
        }
        if (text[i] !== '"') return false;
        i++;
        parts.push(encodeValue(value, element));
      } else {
        const start = i;
        while (i < text.length && text[i] !== delimiter && text[i] !== '}') i++;
        const raw = text.slice(start, i).trim();
        parts.push(raw.toUpperCase() === 'NULL' ? 'null' : encodeValue(raw, element));
      }
    }
    return false;
  };
  return parseLevel() && i === text.length ? parts.join('') : JSON.stringify(text);
}

/** One CSV field (RFC 4180): NULL is empty and unquoted, an empty string is `""`, as in Postgres' CSV COPY. */
export function csvField(text: string | null): string {
  if (text === null) return '';
  if (text === '' || /[",\r\n]/.test(text) || text.trim() !== text) return '"' + text.replaceAll('"', '""') + '"';
  return text;
}

function assertNever(x: never): never {
  throw new Error(`unexpected value encoding ${JSON.stringify(x)}`);
}
