import { isUtf8 } from 'node:buffer';
import { PgError, SqlState } from '../shared/errors.js';
import { describeCode, protocolViolation } from './protocol-error.js';

/**
 * Reads the fields of one message in order, checking every read against the frame's end: a
 * decoder never reads past its message or returns with bytes left over (Postgres'
 * `pq_getmsgend`), so a frame can't smuggle a second statement behind the one the policy saw.
 */
export class Cursor {
  private pos: number;

  constructor(
    private readonly frame: Buffer,
    start: number,
    /** Message name for error messages, e.g. `Parse`. */
    private readonly what: string,
  ) {
    this.pos = start;
  }

  /** A cursor on a typed frame's body, after checking its type byte and length field. */
  static typed(frame: Buffer, code: number, what: string): Cursor {
    const cursor = new Cursor(frame, 5, what);
    if (frame.length < 5 || frame[0] !== code) {
      throw cursor.malformed(`expected type ${describeCode(code)}`);
    }
    if (frame.readInt32BE(1) !== frame.length - 1) {
      throw cursor.malformed('length field does not match the frame');
    }
    return cursor;
  }

  get remaining(): number {
    return this.frame.length - this.pos;
  }

  /** The next byte, not consumed. */
  peek(): number {
    this.need(1);
    return this.frame.readUInt8(this.pos);
  }

  byte(): number {
    this.need(1);
    return this.frame.readUInt8(this.pos++);
  }

  int16(): number {
    this.need(2);
    const value = this.frame.readInt16BE(this.pos);
    this.pos += 2;
    return value;
  }

  int32(): number {
    this.need(4);
    const value = this.frame.readInt32BE(this.pos);
    this.pos += 4;
    return value;
  }

  uint32(): number {
    this.need(4);
    const value = this.frame.readUInt32BE(this.pos);
    this.pos += 4;
    return value;
  }

  /**
   * An Int16 count (of formats, parameters, …), read unsigned as Postgres does: a statement may
   * have up to 65,535 parameters.
   */
  count(): number {
    this.need(2);
    const value = this.frame.readUInt16BE(this.pos);
    this.pos += 2;
    return value;
  }

  /**
   * A NUL-terminated string. `strict` (client text the policy reads) refuses invalid UTF-8 with
   * 22021 as Postgres does, so the policy never judges a U+FFFD-patched string while the raw
   * bytes go upstream; server text is decoded leniently instead — it is only displayed.
   */
  cstring(strict = true): string {
    const start = this.pos;
    const nul = this.frame.indexOf(0, start);
    if (nul < 0) throw this.malformed('string is not NUL-terminated');
    this.pos = nul + 1;
    const text = this.frame.toString('utf8', start, nul);
    // Bytes that are no UTF-8 decode to U+FFFD, which valid text seldom holds: only then are they checked.
    if (strict && text.includes('\uFFFD') && !isUtf8(this.frame.subarray(start, nul))) {
      throw new PgError(
        SqlState.CharacterNotInRepertoire,
        `invalid byte sequence for encoding "UTF8" in ${this.what} message`,
      );
    }
    return text;
  }

  /** `n` bytes as a view into the frame. */
  bytes(n: number): Buffer {
    this.need(n);
    const view = this.frame.subarray(this.pos, this.pos + n);
    this.pos += n;
    return view;
  }

  /** An Int32 length, then that many bytes; -1 is SQL NULL. */
  nullableBytes(): Buffer | null {
    const length = this.int32();
    if (length === -1) return null;
    if (length < 0) throw this.malformed(`invalid value length ${length}`);
    return this.bytes(length);
  }

  /** Everything left, as a view. */
  rest(): Buffer {
    return this.bytes(this.remaining);
  }

  /** Asserts the message was consumed exactly. */
  end(): void {
    if (this.pos !== this.frame.length) {
      throw this.malformed(`${this.frame.length - this.pos} unexpected trailing bytes`);
    }
  }

  malformed(detail: string): PgError {
    return protocolViolation(`malformed ${this.what} message: ${detail}`);
  }

  private need(n: number): void {
    if (this.frame.length - this.pos < n) throw this.malformed('message is truncated');
  }
}
