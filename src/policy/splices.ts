// Text rewrites by splicing (the catalog redirects, the seed rule), and the way back: Postgres
// reports an error's position in the text it ran, which the client never saw, so positions are
// mapped back to the text the client sent.
import { PgError } from '../shared/errors.js';

/** A change of a text: [from, to) replaced by `text` (UTF-16 indexes into the text it applies to). */
export interface Splice {
  from: number;
  to: number;
  text: string;
}

/** What a splice did, kept to map positions back: [from, to) of the text before, and the length put there. */
export type Edit = readonly [from: number, to: number, length: number];

/** The text with the (non-overlapping) splices applied, and what each did, in text order. */
export function applySplices(text: string, splices: readonly Splice[]): { text: string; edits: Edit[] } {
  const sorted = [...splices].sort((a, b) => a.from - b.from);
  let out = '';
  let at = 0;
  for (const s of sorted) {
    out += text.slice(at, s.from) + s.text;
    at = s.to;
  }
  return { text: out + text.slice(at), edits: sorted.map((s) => [s.from, s.to, s.text.length]) };
}

/** The index in the text after `edits` of an index in the text before them (inside a replaced part: where it starts). */
export function indexAfter(index: number, edits: readonly Edit[]): number {
  let shift = 0;
  for (const [from, to, length] of edits) {
    if (index < from) break;
    if (index < to) return from + shift;
    shift += length - (to - from);
  }
  return index + shift;
}

/** The index in the text before `edits` of an index in the text after them (inside an insert: where it went in). */
export function indexBefore(index: number, edits: readonly Edit[]): number {
  let shift = 0;
  for (const [from, to, length] of edits) {
    const start = from + shift;
    if (index < start) break;
    if (index < start + length) return from;
    shift += length - (to - from);
  }
  return index - shift;
}

const isAscii = (s: string) => /^[\x00-\x7f]*$/.test(s);

/** UTF-16 index of a 1-based character position, and back. */
function indexOfPosition(text: string, position: number): number {
  if (isAscii(text)) return position - 1;
  let index = 0;
  for (let chars = 1; chars < position && index < text.length; chars++) index += (text.codePointAt(index) ?? 0) > 0xffff ? 2 : 1;
  return index;
}

function positionOfIndex(text: string, index: number): number {
  return isAscii(text) ? index + 1 : [...text.slice(0, index)].length + 1;
}

/**
 * The 1-based character position in the text the client sent of a position Postgres reported
 * in the rewritten text; `layers` are the edits of each rewrite, in the order they were made.
 */
export function originalPosition(position: number, rewritten: string, original: string, layers: readonly (readonly Edit[])[]): number {
  let index = indexOfPosition(rewritten, position);
  for (let i = layers.length - 1; i >= 0; i--) index = indexBefore(index, layers[i]!);
  return positionOfIndex(original, index);
}

/** An error Postgres reported for a rewritten string, its position counted in the text the client sent. */
export function errorInOriginal(err: PgError, sent: string, original: string, layers: readonly (readonly Edit[])[]): PgError {
  if (err.position === undefined) return err;
  return new PgError(err.code, err.message, {
    detail: err.detail,
    hint: err.hint,
    severity: err.severity,
    extra: err.extra,
    fromUpstream: err.fromUpstream,
    position: originalPosition(err.position, sent, original, layers),
  });
}
