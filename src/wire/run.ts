/**
 * Batches frames bound for one socket: consecutive frames that lie back to back in the same
 * received chunk become one view and one `write`, so relaying a chunk of N unchanged messages
 * costs one write, not N.
 */
import type { Socket } from 'node:net';

export class Run {
  private buffer: ArrayBufferLike | undefined;
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
    if (this.buffer === chunk.buffer && this.end === start) {
      this.end += to - from;
      return;
    }
    this.flush();
    this.buffer = chunk.buffer;
    this.start = start;
    this.end = start + to - from;
  }

  /** Writes what is queued, then `frame` (one the proxy built). */
  write(frame: Buffer): void {
    this.flush();
    if (this.socket && !this.socket.destroyed) this.socket.write(frame);
  }

  flush(): void {
    if (this.buffer === undefined) return;
    if (this.socket && !this.socket.destroyed) this.socket.write(Buffer.from(this.buffer, this.start, this.end - this.start));
    this.buffer = undefined;
  }
}
