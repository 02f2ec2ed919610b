/**
 * The prepared statement a client's Bind, Describe or Close names, read and renamed in place: a
 * client's statement may live on its current backend under another name (see prepared.ts).
 */
import { FrontendCode } from '../protocol/index.js';

/** Where a frame names a prepared statement: the name and its byte range. */
export interface NamedAt {
  name: string;
  start: number;
  end: number;
}

/**
 * The statement a Bind (its second string), or a Describe / Close of a statement (`S`), names;
 * undefined for a portal, or a frame too short to say (Postgres judges those itself).
 */
export function statementName(code: number, frame: Buffer): NamedAt | undefined {
  let start: number;
  if (code === FrontendCode.Bind) {
    const portalEnd = frame.indexOf(0, 5);
    if (portalEnd < 0) return undefined;
    start = portalEnd + 1;
  } else {
    if (frame[5] !== 0x53 /* S */) return undefined;
    start = 6;
  }
  const end = frame.indexOf(0, start);
  if (end < 0) return undefined;
  return { name: frame.toString('utf8', start, end), start, end };
}

/** The frame with the statement name at `at` replaced by `name` (and its length fixed). */
export function renamed(frame: Buffer, at: NamedAt, name: string): Buffer {
  const bytes = Buffer.from(name, 'utf8');
  const out = Buffer.allocUnsafe(frame.length - (at.end - at.start) + bytes.length);
  frame.copy(out, 0, 0, at.start);
  bytes.copy(out, at.start);
  frame.copy(out, at.start + bytes.length, at.end);
  out.writeUInt32BE(out.length - 1, 1);
  return out;
}
