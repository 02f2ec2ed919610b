import { PgError, SqlState } from '../shared/errors.js';
import { unencodable } from './protocol-error.js';

/**
 * Writes one message into a single buffer whose size the builder computed first: no growing,
 * no concatenation. Builders size strings with `cstringSize` and pass the total to `typed` /
 * `untyped`; `done` checks the arithmetic so a size bug can't emit a frame with garbage tail.
 */
export class Writer {
  private readonly buf: Buffer;
  private pos = 0;

  private constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /** A typed message: type byte, then Int32 length of `bodySize + 4`. */
  static typed(code: number, bodySize: number): Writer {
    const writer = new Writer(5 + bodySize);
    writer.byte(code);
    writer.int32(4 + bodySize);
    return writer;
  }

  /** A startup-phase message: Int32 length (itself included), no type byte. */
  static untyped(bodySize: number): Writer {
    const writer = new Writer(4 + bodySize);
    writer.int32(4 + bodySize);
    return writer;
  }

  byte(value: number): this {
    this.buf[this.pos++] = value;
    return this;
  }

  /** Signed values (format codes) and unsigned counts (up to 65,535 parameters) alike. */
  int16(value: number): this {
    if (!Number.isInteger(value) || value < -0x8000 || value > 0xffff) {
      throw new PgError(SqlState.ProgramLimitExceeded, `${value} does not fit in 16 bits`);
    }
    this.pos = this.buf.writeUInt16BE(value & 0xffff, this.pos);
    return this;
  }

  /** Accepts the signed and the unsigned reading of 32 bits (cancel keys arrive as either). */
  int32(value: number): this {
    if (!Number.isInteger(value) || value < -0x8000_0000 || value > 0xffff_ffff) {
      throw new PgError(SqlState.InternalError, `codec: ${value} does not fit in 32 bits`);
    }
    this.pos = this.buf.writeUInt32BE(value >>> 0, this.pos);
    return this;
  }

  /** A string then its NUL. The size was counted by `cstringSize`, which also refused inner NULs. */
  cstring(value: string): this {
    this.pos += this.buf.write(value, this.pos, 'utf8');
    this.buf[this.pos++] = 0;
    return this;
  }

  bytes(value: Uint8Array): this {
    this.buf.set(value, this.pos);
    this.pos += value.length;
    return this;
  }

  done(): Buffer {
    if (this.pos !== this.buf.length) {
      throw new PgError(
        SqlState.InternalError,
        `codec: wrote ${this.pos} of ${this.buf.length} bytes`,
      );
    }
    return this.buf;
  }
}

/**
 * Encoded size of a string plus its terminator. A NUL inside would end the string early on the
 * wire and shift every later field, so it is refused here (22021, like Postgres' "invalid byte
 * sequence for encoding UTF8: 0x00").
 */
export function cstringSize(value: string, what: string): number {
  if (value.includes('\0')) throw unencodable(`${what} must not contain a NUL character`);
  return Buffer.byteLength(value, 'utf8') + 1;
}
