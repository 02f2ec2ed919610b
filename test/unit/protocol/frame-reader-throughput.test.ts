import { describe, expect, it } from 'vitest';
import {
  buildBind,
  buildExecute,
  buildQuery,
  buildSync,
  decodeQuery,
  FrameReader,
  FrontendCode,
} from '../../../src/protocol/index.js';

// Throughput floor for the proxy's hot path. `pgbench -S` through a proxy that must beat
// PgBouncer needs tens of thousands of messages/s on two cores; the floors below are one to two
// orders of magnitude above that, and 5-12x below what the dev box measures (numbers in the
// FrameReader docs), so only a real regression (an Error or a concat per push, a copy per
// frame) trips them, not a slow CI machine.

/** 1000 messages of a `pgbench -S` extended-protocol round: Bind, Execute, Sync (~20 bytes each). */
function pgbenchChunk(): Buffer {
  const round = [
    buildBind({ portal: '', statement: 'P0_1', paramFormats: [], params: [Buffer.from('4217')], resultFormats: [] }),
    buildExecute('', 0),
    buildSync(),
  ];
  const messages: Buffer[] = [];
  for (let i = 0; messages.length < 1000; i++) messages.push(round[i % 3] ?? buildSync());
  return Buffer.concat(messages);
}

/** Frames per second of pushing `chunks` over and over for ~`ms` milliseconds. */
function measure(chunks: readonly Buffer[], framesPerRound: number, ms: number, onFrame: (code: number, frame: Buffer) => void): number {
  const reader = new FrameReader({ source: 'frontend', startup: false });
  let rounds = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(ms) * 1_000_000n;
  let now = start;
  while (now < deadline) {
    for (let r = 0; r < 50; r++) for (const chunk of chunks) reader.push(chunk, onFrame);
    rounds += 50;
    now = process.hrtime.bigint();
  }
  return (rounds * framesPerRound) / (Number(now - start) / 1e9);
}

/** Cuts every message of `stream` into three pieces: the worst case, every frame assembled. */
function everyMessageInThree(stream: Buffer): Buffer[] {
  const pieces: Buffer[] = [];
  for (let pos = 0; pos < stream.length; ) {
    const total = stream.readInt32BE(pos + 1) + 1;
    const a = Math.max(1, Math.floor(total / 3));
    const b = Math.max(a + 1, Math.floor((2 * total) / 3));
    pieces.push(stream.subarray(pos, pos + a), stream.subarray(pos + a, pos + b), stream.subarray(pos + b, pos + total));
    pos += total;
  }
  return pieces;
}

describe('FrameReader throughput', () => {
  it('frames small messages far faster than a proxy needs', () => {
    const chunk = pgbenchChunk();
    let seen = 0;
    const count = (): void => {
      seen++;
    };
    const third = Math.floor(chunk.length / 3);
    const results = {
      oneChunk: measure([chunk], 1000, 300, count),
      threeChunks: measure([chunk.subarray(0, third), chunk.subarray(third, 2 * third), chunk.subarray(2 * third)], 1000, 300, count),
      everyMessageSplitInThree: measure(everyMessageInThree(chunk), 1000, 300, count),
    };
    const queries = Buffer.concat(Array.from({ length: 1000 }, (_, i) => buildQuery(`SELECT abalance FROM pgbench_accounts WHERE aid = ${i}`)));
    let length = 0;
    const decodeAll = (code: number, frame: Buffer): void => {
      if (code === FrontendCode.Query) length += decodeQuery(frame).length;
    };
    const queriesDecoded = measure([queries], 1000, 300, decodeAll);
    expect(length).toBeGreaterThan(0);
    expect(seen).toBeGreaterThan(0);

    const rounded = Object.fromEntries(
      Object.entries({ ...results, queriesDecoded }).map(([k, v]) => [k, `${(v / 1e6).toFixed(2)}M frames/s`]),
    );
    console.info('FrameReader throughput', rounded);
    expect(results.oneChunk).toBeGreaterThan(2_000_000);
    expect(results.threeChunks).toBeGreaterThan(2_000_000);
    expect(results.everyMessageSplitInThree).toBeGreaterThan(300_000);
    expect(queriesDecoded).toBeGreaterThan(250_000);
  });
});
