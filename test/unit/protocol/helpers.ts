import { expect } from 'vitest';
import { isPgError, type PgError } from '../../../src/shared/errors.js';
import { FrameReader, type FrameReaderOptions } from '../../../src/protocol/index.js';

export interface Frame {
  code: number;
  bytes: Buffer;
}

/** Feeds `chunks` to a fresh reader and returns copies of the frames, so later pushes can't alter them unseen. */
export function readAll(chunks: readonly Buffer[], options: FrameReaderOptions): Frame[] {
  const reader = new FrameReader(options);
  const frames: Frame[] = [];
  for (const chunk of chunks) {
    reader.push(chunk, (code, frame) => frames.push({ code, bytes: Buffer.from(frame) }));
  }
  expect(reader.bufferedBytes).toBe(0);
  return frames;
}

/** Runs `fn`, which must throw a PgError; returns it for field assertions. */
export function pgErrorOf(fn: () => unknown): PgError {
  try {
    fn();
  } catch (err: unknown) {
    if (isPgError(err)) return err;
    throw err;
  }
  throw new Error('expected a PgError, nothing was thrown');
}

/** A typed frame with an arbitrary body and a correct length field. */
export function rawTyped(code: string, body: Buffer | string): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  const frame = Buffer.alloc(5 + payload.length);
  frame.write(code, 0, 'latin1');
  frame.writeInt32BE(4 + payload.length, 1);
  payload.copy(frame, 5);
  return frame;
}

/** An untyped startup-phase frame: length, request code, body. */
export function rawStartup(request: number, body: Buffer = Buffer.alloc(0)): Buffer {
  const frame = Buffer.alloc(8 + body.length);
  frame.writeInt32BE(frame.length, 0);
  frame.writeInt32BE(request, 4);
  body.copy(frame, 8);
  return frame;
}
