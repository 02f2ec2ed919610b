/**
 * Start-up and authentication read a handful of messages one after another; this turns a
 * socket's frames into `await next()`. The relay takes the socket over afterwards, together
 * with any frames that arrived early.
 */
import type { Socket } from 'node:net';
import { PgError, SqlState } from '../shared/errors.js';
import { withoutAnswer, type FrameReader } from '../protocol/index.js';

export interface Frame {
  code: number;
  frame: Buffer;
}

export class FrameQueue {
  private readonly frames: Frame[] = [];
  private waiter: { resolve(f: Frame): void; reject(e: unknown): void } | undefined;
  private failure: unknown;
  private readonly onData = (chunk: Buffer) => {
    try {
      this.reader.push(chunk, (code, frame) => this.deliver({ code, frame }));
    } catch (err: unknown) {
      this.fail(err);
    }
  };
  private readonly onEnd = () => this.fail(withoutAnswer(new PgError(SqlState.ConnectionFailure, 'the client closed the connection')));

  constructor(
    private readonly socket: Socket,
    private readonly reader: FrameReader,
  ) {
    socket.on('data', this.onData);
    socket.on('close', this.onEnd);
    socket.on('end', this.onEnd);
    socket.resume(); // a connection whose first bytes were peeked at is paused
  }

  private deliver(f: Frame): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve(f);
    } else {
      this.frames.push(f);
    }
  }

  private fail(err: unknown): void {
    this.failure ??= err;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.reject(err);
    }
  }

  next(): Promise<Frame> {
    const f = this.frames.shift();
    if (f) return Promise.resolve(f);
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  /** Stops listening; returns frames received but not yet read. */
  detach(): Frame[] {
    this.socket.off('data', this.onData);
    this.socket.off('close', this.onEnd);
    this.socket.off('end', this.onEnd);
    return this.frames.splice(0);
  }
}
