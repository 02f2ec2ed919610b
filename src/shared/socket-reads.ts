/**
 * Reading plain TCP sockets past Node's stream machinery: one buffer for all of them. A socket
 * left to itself allocates 64 KiB for every read and hands the bytes through its `Readable`'s
 * buffering (a chunk added, a `maybeReadMore` tick per read); a read here is copied out at its own
 * size (a small message into Node's shared pool) and emitted as the socket's `data`, so its
 * listeners stay as they are, and `pause`/`resume` stop and start the reads themselves. Safe to
 * share: a read's callback runs to its end before the next read. A TLS socket reads through its
 * own layer and keeps Node's reads.
 *
 * Measured with 8 `pgbench -S` clients: a bare relay whose upstream is read so, 25.6 against 27.4
 * µs of CPU per transaction (2026-11-27); one whose both sides are, 0.91 of one whose neither is,
 * and repobase with its clients read so too, 0.94–0.955 of before (bench/notes/2026-11-29-client-reads.md).
 * Calling a socket's one `data` listener directly, and copying short reads by hand, took another
 * 2 µs of user time per transaction (under sampling) off `emit`'s and `copy`'s generic loads and
 * views (bench/notes/2026-11-29-wire-listener.md).
 */
import { Buffer } from 'node:buffer'; // a module binding: the global one is looked up on every read
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/**
 * Reads this long or shorter — a transaction's messages, most often — are copied byte by byte:
 * `copy` of part of a buffer makes a view of it first, and in a busy process its loads, shared
 * with every other use of `Buffer`, are generic: about 1.7 µs per `-S -M simple` transaction
 * under sampling against 0.2 for the loop. (A microbenchmark, where they are not, has the loop
 * lose from 48 bytes on: the threshold keeps the loop under what `copy` costs here.)
 */
const SHORT_READ = 128;

/** What `emit` reads of a socket's listeners (an `EventEmitter`'s own field). */
interface Listeners {
  _events: { data?: ((chunk: Buffer) => void) | ((chunk: Buffer) => void)[] } | undefined;
}

/** A read's callback, called as the socket's method (true: go on reading). */
function readInto(this: Socket, bytes: number): boolean {
  const chunk = Buffer.allocUnsafe(bytes);
  if (bytes <= SHORT_READ) for (let i = 0; i < bytes; i++) chunk[i] = READ_BUFFER[i]!;
  else READ_BUFFER.copy(chunk, 0, 0, bytes);
  // One listener (the relay's, a session's sink) is called as `emit` would call it, without its
  // rest arguments and `apply`, whose loads are megamorphic (every emitter of the process shares them).
  const listener = (this as unknown as Listeners)._events?.data;
  if (typeof listener === 'function') listener.call(this, chunk);
  else this.emit('data', chunk);
  return true;
}

/** `net.connect`'s `onread` option that reads a socket it opens so. */
export const DIRECT_READS = { buffer: READ_BUFFER, callback: readInto } as const;

/** What `onread` sets on a socket, by the names Node gives them. */
interface UserBuffer {
  buffer: symbol;
  callback: symbol;
}
let fields: UserBuffer | null | undefined;

function userBufferFields(socket: Socket): UserBuffer | null {
  if (fields !== undefined) return fields;
  const symbols = Object.getOwnPropertySymbols(socket);
  const buffer = symbols.find((s) => s.description === 'kBuffer');
  const callback = symbols.find((s) => s.description === 'kBufferCb');
  fields = buffer !== undefined && callback !== undefined ? { buffer, callback } : null;
  return fields;
}

/**
 * An accepted socket read so from now on. Node offers `onread` only to the sockets it connects;
 * an accepted one is switched by setting what that option sets (found by their names, once: a
 * Node without them keeps its own reads). Only a plain socket that flows with nothing buffered is
 * switched, so that no byte is read out of order and none while it is paused; its `data` must
 * have a listener from now on (it is emitted as read). True when switched.
 */
export function readDirectly(socket: Socket): boolean {
  const handle = (socket as unknown as { _handle?: { useUserBuffer?(buffer: Buffer): void } | null })._handle;
  if (socket instanceof TLSSocket || typeof handle?.useUserBuffer !== 'function' || socket.destroyed) return false;
  if (socket.isPaused() || socket.readableLength > 0 || socket.readableFlowing !== true) return false;
  const f = userBufferFields(socket);
  const own = socket as unknown as Record<symbol, unknown>;
  if (f === null || own[f.buffer] !== null) return false;
  own[f.buffer] = READ_BUFFER;
  own[f.callback] = readInto;
  handle.useUserBuffer(READ_BUFFER);
  return true;
}
