/**
 * `Answers` outside a relay, for measuring (bench/answers.ts) and testing (the lane's test) the
 * answers' path on its own: a backend message of any type, and a host with no pooling whose
 * backend is always attached.
 */
import type { AnswersHost } from '../../src/wire/answers.js';
import { BackendCode, UTF8_TEXT } from '../../src/protocol/index.js';

/** A backend message of type `code` with `body`. */
export function backendMessage(code: number, body: Buffer | string = ''): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  const out = Buffer.alloc(5 + b.length);
  out[0] = code;
  out.writeInt32BE(4 + b.length, 1);
  b.copy(out, 5);
  return out;
}

/** A RowDescription of one text column, `abalance` (pgbench's `-S` answer). */
export const ROW_DESCRIPTION = backendMessage(BackendCode.RowDescription, Buffer.concat([Buffer.from([0, 1]), Buffer.from('abalance\0'), Buffer.alloc(18)]));

/** What `Answers` needs of a relay, with no pooling; `requestDone` as given, else nothing. */
export function detachedHost(requestDone: AnswersHost['requestDone'] = () => undefined): AnswersHost {
  return {
    pooling: undefined,
    upstream: () => ({ session: { reading: new Map(), readingChanged: false } as never, backend: undefined }),
    requestDone,
    explain: () => undefined,
    signal: () => undefined,
    notification: (f) => f,
    upstreamFatal: () => undefined,
    answered: () => undefined,
    text: () => UTF8_TEXT,
  };
}
