import type { PgError } from '../shared/errors.js';
import {
  BackendCode,
  DEFAULT_MAX_MESSAGE_BYTES,
  FrontendCode,
  MAX_STARTUP_BYTES,
  RequestCode,
} from './codes.js';
import { describeCode, protocolViolation, withoutAnswer } from './protocol-error.js';

/**
 * Called once per complete message. `frame` is the whole message, header included. It is a view
 * into the pushed chunk when the message lay whole inside it (the chunk itself when it is all of
 * it), else a buffer of its own; either way the reader never writes into it again, so it may be
 * queued on a socket as is.
 */
export type FrameHandler = (code: number, frame: Buffer) => void;

export type FrameReaderOptions =
  | {
      /** The client's stream: frontend type codes only. */
      source: 'frontend';
      /** Begin in the startup phase (untyped messages) and switch after the StartupMessage. */
      startup: boolean;
      /** Largest accepted message, type byte and length included. Default 256 MiB. */
      maxMessageBytes?: number;
      /** Largest accepted startup-phase message. Default 10,000 bytes, as Postgres. */
      maxStartupBytes?: number;
    }
  | {
      /** The server's stream: backend type codes only, always typed. */
      source: 'backend';
      maxMessageBytes?: number;
    };

const TYPED_HEADER = 5; // type byte + Int32 length
const STARTUP_HEADER = 8; // Int32 length + Int32 request code

/** Lookup tables: one array read per message beats a Set or a switch on the hot path. */
function codeTable(codes: Record<string, number>): Uint8Array {
  const table = new Uint8Array(256);
  for (const code of Object.values(codes)) table[code] = 1;
  return table;
}
const FRONTEND_CODES = codeTable(FrontendCode);
FRONTEND_CODES[FrontendCode.Startup] = 0; // pseudo code, never valid on the wire
const BACKEND_CODES = codeTable(BackendCode);

/**
 * Splits a byte stream into protocol messages, in either direction, without copying whole
 * messages: frames inside a chunk come out as `subarray` views of it; only a message that
 * straddles chunks is assembled, copied once into a buffer of its exact size when its last
 * byte arrives. That buffer is handed out and never reused, because a relay queues frames on a
 * socket (`write` keeps a reference) and a recycled buffer would be overwritten under it.
 *
 * `push` takes the chunk over: the caller must not write into it afterwards (Node's socket
 * `data` chunks are fresh; a fixed `onread` buffer would break frames and held pieces, which is
 * why upstream sockets copy each read out of theirs, see upstream/session.ts).
 *
 * Lengths are checked on the header alone: a client announcing 1 GB is refused on its first
 * five bytes, before anything is buffered. Any violation throws a `PgError` 08P01 (FATAL); so
 * does any later `push`, since the stream position is lost — including after `onFrame` threw.
 *
 * Measured on the dev box (Node 20.20, one core; `frame-reader-throughput.test.ts`), frames/s:
 * 1000 Bind/Execute/Sync in one chunk ≈ 24 M; that stream cut into 3 chunks ≈ 24 M; every
 * message split in three pieces (worst case, each one assembled) ≈ 3.4 M; Query frames framed
 * and decoded with `decodeQuery` ≈ 2.6 M. `pgbench -S` needs tens of thousands.
 */
export class FrameReader {
  private readonly validCodes: Uint8Array;
  private maxMessageBytes: number;
  private readonly maxStartupBytes: number;
  private startup: boolean;
  /** Header bytes of a message whose header itself straddles chunks; never handed out. */
  private readonly head = Buffer.alloc(STARTUP_HEADER);
  private headLength = 0;
  /**
   * The straddling message so far, as views of the chunks it came in: memory follows the bytes
   * received, not the length announced, and each byte is copied once, when it completes.
   */
  private pieces: Buffer[] = [];
  private pieceBytes = 0;
  /** Size of the straddling message; 0 when there is none. */
  private total = 0;
  private failure: PgError | null = null;
  private busy = false;

  constructor(options: FrameReaderOptions) {
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (options.source === 'frontend') {
      this.validCodes = FRONTEND_CODES;
      this.startup = options.startup;
      this.maxStartupBytes = options.maxStartupBytes ?? MAX_STARTUP_BYTES;
    } else {
      this.validCodes = BACKEND_CODES;
      this.startup = false;
      this.maxStartupBytes = 0;
    }
  }

  /** True until a StartupMessage has been read: frames are untyped, code `FrontendCode.Startup`. */
  get inStartupPhase(): boolean {
    return this.startup;
  }

  /** Bytes held across pushes (a partial header or message): what this reader costs in memory. */
  get bufferedBytes(): number {
    return this.headLength + this.pieceBytes;
  }

  /** The announced size of a message partly read (its header in, its body not yet whole); 0 when there is none. */
  get partialTotal(): number {
    return this.total;
  }

  /**
   * Changes the limit for messages whose header has not arrived yet. Postgres reads messages
   * before authentication with a small limit and lifts it after login; doing the same keeps an
   * unauthenticated client from making the proxy hold a large message.
   */
  setMaxMessageBytes(maxMessageBytes: number): void {
    this.maxMessageBytes = maxMessageBytes;
  }

  /** Feeds one chunk; calls `onFrame` synchronously for each message completed by it, in order. */
  push(chunk: Buffer, onFrame: FrameHandler): void {
    if (this.failure !== null) throw this.failure;
    if (this.busy) throw (this.failure = protocolViolation('frame reader used after an earlier failure'));
    // Stays set if anything below throws, onFrame included: the stream position is then lost.
    // A flag, not a ready-made error: building an Error per push costs microseconds.
    this.busy = true;
    let pos = 0;
    if (this.headLength > 0 || this.total !== 0) {
      pos = this.resume(chunk, onFrame);
      if (pos < 0) {
        this.busy = false;
        return;
      }
    }
    const end = chunk.length;
    while (pos < end) {
      const available = end - pos;
      if (this.startup) {
        if (available < STARTUP_HEADER) {
          if (available >= 4) this.checkStartupLength(chunk.readInt32BE(pos)); // as Postgres, which reads the length first
          this.stashHead(chunk, pos);
          break;
        }
        const total = this.checkStartupHeader(chunk, pos);
        if (available < total) {
          this.beginPartial(chunk, pos, total);
          break;
        }
        pos += total;
        this.emitStartup(chunk.subarray(pos - total, pos), end - pos, onFrame);
        continue;
      }
      // Typed messages: the hot path.
      if (available < TYPED_HEADER) {
        this.stashHead(chunk, pos);
        break;
      }
      const total = this.checkTypedHeader(chunk, pos);
      if (available < total) {
        this.beginPartial(chunk, pos, total);
        break;
      }
      // A chunk that is one message whole (a client's Query, most often) is that message: no view made.
      onFrame(chunk[pos] ?? 0, total === end ? chunk : chunk.subarray(pos, pos + total));
      pos += total;
    }
    this.busy = false;
  }

  /** Continues a header or message begun by earlier chunks. Returns where the chunk's next message starts, or -1 if the chunk was used up. */
  private resume(chunk: Buffer, onFrame: FrameHandler): number {
    let pos = 0;
    if (this.total === 0) {
      const headSize = this.startup ? STARTUP_HEADER : TYPED_HEADER;
      const need = headSize - this.headLength;
      if (chunk.length < need) {
        chunk.copy(this.head, this.headLength);
        this.headLength += chunk.length;
        if (this.startup && this.headLength >= 4) this.checkStartupLength(this.head.readInt32BE(0));
        return -1;
      }
      chunk.copy(this.head, this.headLength, 0, need);
      pos = need;
      this.total = this.startup
        ? this.checkStartupHeader(this.head, 0)
        : this.checkTypedHeader(this.head, 0);
      this.pieces.push(Buffer.from(this.head.subarray(0, headSize))); // `head` is reused
      this.pieceBytes = headSize;
      this.headLength = 0;
    }
    const take = Math.min(this.total - this.pieceBytes, chunk.length - pos);
    if (take > 0) {
      this.pieces.push(chunk.subarray(pos, pos + take));
      this.pieceBytes += take;
      pos += take;
    }
    if (this.pieceBytes < this.total) return -1;
    const frame = Buffer.concat(this.pieces, this.total);
    this.pieces = [];
    this.pieceBytes = 0;
    this.total = 0;
    if (this.startup) this.emitStartup(frame, chunk.length - pos, onFrame);
    else onFrame(frame[0] ?? 0, frame);
    return pos;
  }

  private stashHead(chunk: Buffer, pos: number): void {
    chunk.copy(this.head, 0, pos);
    this.headLength = chunk.length - pos;
  }

  private beginPartial(chunk: Buffer, pos: number, total: number): void {
    this.pieces.push(chunk.subarray(pos));
    this.pieceBytes = chunk.length - pos;
    this.total = total;
  }

  /** Validates a typed header at `pos`; returns the whole message size. */
  private checkTypedHeader(buf: Buffer, pos: number): number {
    const code = buf[pos] ?? 0;
    if (this.validCodes[code] !== 1) {
      throw this.fail(`invalid message type ${describeCode(code)}`);
    }
    const length = buf.readInt32BE(pos + 1);
    if (length < 4) {
      throw this.fail(`invalid message length ${length} for message type ${describeCode(code)}`);
    }
    if (length >= this.maxMessageBytes) {
      throw this.fail(
        `message of ${length + 1} bytes exceeds the limit of ${this.maxMessageBytes} bytes`,
      );
    }
    return length + 1;
  }

  /** Validates a startup-phase header at `pos`; returns the whole message size. */
  private checkStartupHeader(buf: Buffer, pos: number): number {
    const length = buf.readInt32BE(pos);
    this.checkStartupLength(length);
    const request = buf.readInt32BE(pos + 4);
    switch (request) {
      case RequestCode.SSLRequest:
      case RequestCode.GSSENCRequest:
      case RequestCode.CancelRequest:
        return length;
      default: {
        const major = request >>> 16;
        if (major !== 3) {
          throw this.fail(
            `unsupported frontend protocol ${major}.${request & 0xffff}: server supports 3.0`,
          );
        }
        return length;
      }
    }
  }

  private checkStartupLength(length: number): void {
    if (length < STARTUP_HEADER || length > this.maxStartupBytes) {
      // Not a Postgres client (or a Terminate sent before start-up): Postgres only logs it.
      throw withoutAnswer(this.fail(`invalid length of startup packet: ${length}`));
    }
  }

  private emitStartup(frame: Buffer, remaining: number, onFrame: FrameHandler): void {
    const request = frame.readInt32BE(4);
    if (request === RequestCode.SSLRequest || request === RequestCode.GSSENCRequest) {
      // The client must wait for our one-byte answer; bytes already behind the request were
      // sent in the clear and would be read as if they came over the encrypted channel
      // (CVE-2021-23214), so they end the connection, as in Postgres.
      if (remaining > 0) throw this.fail('received unencrypted data after encryption request');
    } else if (request !== RequestCode.CancelRequest) {
      this.startup = false;
    }
    onFrame(FrontendCode.Startup, frame);
  }

  private fail(message: string): PgError {
    this.headLength = 0;
    this.pieces = [];
    this.pieceBytes = 0;
    this.total = 0;
    this.failure = protocolViolation(message);
    return this.failure;
  }
}
