/**
 * Bytes of a text upload → UTF-8 chunks that are known to be valid, in constant memory. A
 * declared encoding (any WHATWG label Node's ICU knows: latin1, windows-1252, utf-16le,
 * shift_jis…) is converted; a UTF-16 byte order mark selects UTF-16 by itself; a UTF-8 byte
 * order mark is dropped. Invalid UTF-8 and NUL bytes (binary data) fail with the line they are on.
 */
import { isUtf8 } from 'node:buffer';
import { TextDecoder } from 'node:util';
import { PgError, SqlState } from '../shared/errors.js';
import { located } from './located.js';

/** Reads up to `size` bytes from the front of `source`; `rest` replays them followed by the remainder. */
export async function peek(source: AsyncIterable<Buffer>, size: number): Promise<{ head: Buffer; rest: AsyncIterable<Buffer> }> {
  const it = source[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let length = 0;
  let done = false;
  while (length < size) {
    const next = await it.next();
    if (next.done) {
      done = true;
      break;
    }
    chunks.push(next.value);
    length += next.value.length;
  }
  const head = Buffer.concat(chunks);
  async function* rest(): AsyncGenerator<Buffer> {
    if (head.length) yield head;
    if (done) return;
    for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
  }
  return { head, rest: rest() };
}

function countLines(buf: Buffer, end: number): number {
  let n = 0;
  for (let i = buf.indexOf(10); i >= 0 && i < end; i = buf.indexOf(10, i + 1)) n++;
  return n;
}

/** Bytes at the end of `buf` that start a UTF-8 sequence not yet complete (0–3). */
function incompleteTail(buf: Buffer): number {
  for (let back = 1; back <= Math.min(3, buf.length); back++) {
    const b = buf[buf.length - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

/** Offset of the first byte of `buf` that is not part of valid UTF-8. */
function firstInvalid(buf: Buffer): number {
  let lo = 0;
  let hi = buf.length;
  // Valid prefixes are monotone: search the longest one (whole characters only).
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    const cut = mid - incompleteTail(buf.subarray(0, mid));
    if (isUtf8(buf.subarray(0, cut))) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function invalidUtf8(line: number, encoding: string): PgError {
  return located(SqlState.CharacterNotInRepertoire, line, `invalid byte sequence for encoding "${encoding}" at line ${line}`, {
    hint: encoding === 'UTF8' ? 'the file is not UTF-8: name its encoding, e.g. encoding=latin1 or encoding=windows-1252' : undefined,
  });
}

function binary(line: number): PgError {
  return located(SqlState.BadCopyFileFormat, line, `the file holds binary data (a NUL byte at line ${line}), not text`, {
    hint: 'upload CSV, TSV, JSON, NDJSON or XLSX',
  });
}

/** Checks one UTF-8 chunk; `lines` is the number of line breaks before it. */
function check(buf: Buffer, lines: number): void {
  const nul = buf.indexOf(0);
  if (!isUtf8(buf)) {
    const at = firstInvalid(buf);
    if (nul < 0 || nul > at) throw invalidUtf8(lines + countLines(buf, at) + 1, 'UTF8');
  }
  if (nul >= 0) throw binary(lines + countLines(buf, nul) + 1);
}

async function* fromUtf8(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let lines = 0;
  let carry: Buffer | undefined;
  let first = true;
  for await (const chunk of source) {
    let buf = carry ? Buffer.concat([carry, chunk]) : chunk;
    if (first && buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) buf = buf.subarray(3);
    if (first && buf.length < 3 && buf.length > 0 && buf[0] === 0xef) {
      carry = buf; // too short to tell whether a BOM starts here
      continue;
    }
    first = false;
    const tail = incompleteTail(buf);
    carry = tail ? buf.subarray(buf.length - tail) : undefined;
    const whole = tail ? buf.subarray(0, buf.length - tail) : buf;
    check(whole, lines);
    lines += countLines(whole, whole.length);
    if (whole.length) yield whole;
  }
  if (carry?.length) {
    check(carry, lines);
    yield carry;
  }
}

async function* fromOther(source: AsyncIterable<Buffer>, label: string): AsyncGenerator<Buffer> {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(label, { fatal: true });
  } catch {
    throw new PgError(SqlState.InvalidParameterValue, `unknown encoding "${label}"`, { hint: 'use a WHATWG label: utf-8, latin1, windows-1252, utf-16le, shift_jis, gbk…' });
  }
  let lines = 0;
  const name = decoder.encoding.toUpperCase();
  const emit = (text: string): Buffer => {
    const out = Buffer.from(text, 'utf8');
    const nul = out.indexOf(0);
    if (nul >= 0) throw binary(lines + countLines(out, nul) + 1);
    lines += countLines(out, out.length);
    return out;
  };
  try {
    for await (const chunk of source) {
      const out = emit(decoder.decode(chunk, { stream: true }));
      if (out.length) yield out;
    }
    const out = emit(decoder.decode());
    if (out.length) yield out;
  } catch (err: unknown) {
    if (err instanceof TypeError) throw invalidUtf8(lines + 1, name);
    throw err;
  }
}

/** UTF-16 by its byte order mark, else the declared encoding. */
export function effectiveEncoding(head: Buffer, declared: string): string {
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return declared;
}

/** Valid UTF-8 chunks of a text upload in `encoding`. */
export function decodeText(source: AsyncIterable<Buffer>, encoding: string): AsyncIterable<Buffer> {
  const label = encoding.trim().toLowerCase();
  return label === 'utf-8' || label === 'utf8' || label === 'unicode-1-1-utf-8' ? fromUtf8(source) : fromOther(source, label);
}
