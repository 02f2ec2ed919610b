/**
 * Batches frames bound for one socket: consecutive frames that lie back to back in the same
 * received chunk become one `write`, so relaying a chunk of N unchanged messages costs one write,
 * not N — of the chunk itself when they are all of it (no view made), else of one view.
 */
import type { Socket } from 'node:net';

export class Run {
  /** The buffer first queued of the bytes queued now (a chunk or a frame's view of one), and the memory they lie in. */
  private first: Buffer | undefined;
  private memory: ArrayBufferLike | undefined;
  /** Where the queued bytes start and end in `memory`. */
  private start = 0;
  private end = 0;

  constructor(private readonly socket: Socket | undefined) {}

  /** Queues `frame` (a view into a received chunk) after everything queued before. */
  add(frame: Buffer): void {
    this.addRange(frame, 0, frame.length);
  }

  /** Queues bytes `from` to `to` of `chunk` (a received one) after everything queued before, without a view of them. */
  addRange(chunk: Buffer, from: number, to: number): void {
    const start = chunk.byteOffset + from;
    if (this.first !== undefined && this.end === start && (chunk === this.first || chunk.buffer === this.memory)) {
      this.end += to - from;
      return;
    }
    this.flush();
    this.first = chunk;
    this.memory = chunk.buffer;
    this.start = start;
    this.end = start + to - from;
  }

  /** Writes what is queued, then `frame` (one the proxy built). */
  write(frame: Buffer): void {
    this.flush();
    if (this.socket && !this.socket.destroyed) this.socket.write(frame);
  }

  flush(): void {
    const first = this.first;
    if (first === undefined) return;
    this.first = this.memory = undefined;
    if (!this.socket || this.socket.destroyed) return;
    const whole = this.start === first.byteOffset && this.end === first.byteOffset + first.length;
    this.socket.write(whole ? first : Buffer.from(first.buffer, this.start, this.end - this.start));
  }
}
