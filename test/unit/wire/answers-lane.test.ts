import { describe, expect, it } from 'vitest';
import type { Socket } from 'node:net';
import { Answers } from '../../../src/wire/answers.js';
import { AnswerMeter } from '../../../src/wire/metering.js';
import { pending } from '../../../src/wire/requests.js';
import { Run } from '../../../src/wire/run.js';
import { PgError, SqlState } from '../../../src/shared/errors.js';
import { BackendCode, FrameReader, buildCommandComplete, buildEmptyQueryResponse, buildErrorResponse, buildNoticeResponse, buildParameterStatus, buildReadyForQuery } from '../../../src/protocol/index.js';
import { ROW_DESCRIPTION as rowDescription, backendMessage as message, detachedHost } from '../../../bench/lib/answers-rig.js';

const dataRow = (value: string) => message(BackendCode.DataRow, Buffer.concat([Buffer.from([0, 1]), Buffer.from([0, 0, 0, value.length]), Buffer.from(value)]));
const bigRow = message(BackendCode.DataRow, Buffer.concat([Buffer.from([0, 1, 0, 0, 0x4e, 0x20]), Buffer.alloc(20_000, 0x61)]));

/** The answers to eight requests, as a backend sends them: rows, an extended batch, a notice, an error, a setting, an empty query, a large row. */
const ANSWERS: Buffer[][] = [
  [rowDescription, dataRow('7'), dataRow('42'), buildCommandComplete('SELECT 2'), buildReadyForQuery('I')],
  [message(BackendCode.ParseComplete), message(BackendCode.BindComplete), rowDescription, dataRow('1'), buildCommandComplete('SELECT 1'), buildReadyForQuery('I')],
  [buildCommandComplete('BEGIN'), buildReadyForQuery('T')],
  [buildNoticeResponse(new PgError(SqlState.SuccessfulCompletion, 'a notice', { severity: 'NOTICE' })), buildCommandComplete('INSERT 0 1'), buildReadyForQuery('T')],
  [buildErrorResponse(new PgError(SqlState.DataException, 'a data exception')), buildReadyForQuery('E')],
  [buildCommandComplete('ROLLBACK'), buildParameterStatus('TimeZone', 'UTC'), buildReadyForQuery('I')],
  [buildEmptyQueryResponse(), buildReadyForQuery('I')],
  [rowDescription, bigRow, dataRow('3'), message(BackendCode.NoData), buildCommandComplete('CREATE TABLE'), buildReadyForQuery('I')],
];

/** Cuts `bytes` into chunks at points a seeded generator picks (some within frames, some within headers). */
function chunks(bytes: Buffer, seed: number): Buffer[] {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = next() < 0.5 ? bytes.length : 1 + Math.floor(next() * 120);
    out.push(Buffer.from(bytes.subarray(at, at + size)));
    at += size;
  }
  return out;
}

/** Relays `stream` to a client, with the lane or frame by frame; what the client got (and in how many writes) and what was counted. */
function relay(stream: Buffer[], lane: boolean) {
  const written: Buffer[] = [];
  const socket = { destroyed: false, write: (b: Buffer) => void written.push(Buffer.from(b)) } as unknown as Socket;
  const toClient = new Run(socket);
  const usage = { statements: 0, rowsReturned: 0 };
  const ddl: string[] = [];
  const done: string[] = [];
  const answers = new Answers(toClient, detachedHost((_p, before) => void done.push(before)), new AnswerMeter(usage as never, (tag) => ddl.push(tag)));
  for (let i = 0; i < ANSWERS.length; i++) answers.request(pending([], undefined));
  const reader = new FrameReader({ source: 'backend' });
  for (const chunk of stream) {
    if (lane) answers.chunk(chunk, reader, answers.frame, () => true);
    else reader.push(chunk, answers.frame);
    toClient.flush();
  }
  return { got: { bytes: Buffer.concat(written), usage, ddl, done, status: answers.status }, writes: written.map((b) => b.length) };
}

describe('the answers lane', () => {
  const whole = Buffer.concat(ANSWERS.flat());

  it('gives the client what the frame-by-frame path gives it, and counts alike, however the stream is cut', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const stream = chunks(whole, seed);
      const byLane = relay(stream, true).got;
      expect(byLane).toEqual(relay(stream, false).got);
      expect(byLane.bytes.equals(whole)).toBe(true);
      expect(byLane.usage).toEqual({ statements: 6, rowsReturned: 3 });
      expect(byLane.ddl).toEqual(['CREATE TABLE']);
      expect(byLane.done).toHaveLength(ANSWERS.length);
    }
  });

  it('writes a chunk of plain answers in one write', () => {
    const stream = [Buffer.concat(ANSWERS[0]!), Buffer.concat(ANSWERS[1]!)];
    expect(relay(stream, true).writes).toEqual([stream[0]!.length, stream[1]!.length]);
  });
});
