// The messages whose text the proxy reads or writes, between UTF-8 (the proxy's own) and a
// client's encoding: the statement of a Query or Parse the proxy decodes to judge, the Query and
// Parse it sends upstream (rewrites, replays, statements prepared again), and the errors it
// builds or rewrites. Every other message passes unchanged, in the encoding both ends share.
import { BackendCode, FrontendCode } from './codes.js';
import type { ClientText } from '../shared/client-encoding.js';
import { protocolViolation } from './protocol-error.js';

type Text = (bytes: Uint8Array) => string;
type Bytes = (text: string) => Buffer;

/** The NUL-terminated strings from `at`, `count` of them (all up to a final NUL when undefined), and where they end. */
function strings(frame: Buffer, at: number, count: number | undefined): { parts: Buffer[]; end: number } {
  const parts: Buffer[] = [];
  let pos = at;
  while (count === undefined ? frame[pos] !== 0 : parts.length < count) {
    const nul = frame.indexOf(0, pos);
    if (nul < 0 || nul >= frame.length) throw protocolViolation('string is not NUL-terminated');
    parts.push(frame.subarray(pos, nul));
    pos = nul + 1;
  }
  return { parts, end: pos };
}

/**
 * `frame` with the text of its strings converted by `decode` then `encode`: a Query's statement,
 * a Parse's name and statement, an ErrorResponse's or NoticeResponse's fields. Other messages
 * come back as they are.
 */
export function transcodeFrame(frame: Buffer, decode: Text, encode: Bytes): Buffer {
  const code = frame[0]!;
  let parts: Buffer[];
  let rest: Buffer;
  if (code === FrontendCode.Query) {
    ({ parts } = strings(frame, 5, 1));
    rest = Buffer.alloc(0);
  } else if (code === FrontendCode.Parse) {
    const s = strings(frame, 5, 2);
    parts = s.parts;
    rest = frame.subarray(s.end);
  } else if (code === BackendCode.ErrorResponse || code === BackendCode.NoticeResponse) {
    // Each field: its type byte, then its text.
    const out: Buffer[] = [];
    let pos = 5;
    while (frame[pos] !== 0) {
      const nul = frame.indexOf(0, pos + 1);
      if (nul < 0) throw protocolViolation('error field is not NUL-terminated');
      out.push(frame.subarray(pos, pos + 1), encode(decode(frame.subarray(pos + 1, nul))), Buffer.from([0]));
      pos = nul + 1;
    }
    out.push(Buffer.from([0]));
    return framed(code, out);
  } else {
    return frame;
  }
  const body: Buffer[] = [];
  for (const part of parts) body.push(encode(decode(part)), Buffer.from([0]));
  body.push(rest);
  return framed(code, body);
}

function framed(code: number, body: Buffer[]): Buffer {
  const length = 4 + body.reduce((n, b) => n + b.length, 0);
  const head = Buffer.alloc(5);
  head[0] = code;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, ...body]);
}

const fromUtf8: Text = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
const toUtf8: Bytes = (text) => Buffer.from(text, 'utf8');

/** A message the proxy built (UTF-8) in the client's encoding; itself for a UTF-8 client. */
export function inClientText(frame: Buffer, text: ClientText): Buffer {
  return text.utf8 ? frame : transcodeFrame(frame, fromUtf8, text.encode);
}

/** A message in the client's encoding (a Query, Parse or error) in UTF-8; 22021 for bytes that are no text in it. */
export function fromClientText(frame: Buffer, text: ClientText): Buffer {
  return text.utf8 ? frame : transcodeFrame(frame, text.decode, toUtf8);
}
