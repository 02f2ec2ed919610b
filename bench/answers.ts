/**
 * What relaying one answer costs the wire relay, in one hot loop: a `pgbench -S -M simple` answer
 * (RowDescription, DataRow, CommandComplete, ReadyForQuery in one chunk) through `Answers` and a
 * `Run` on a socket that drops the bytes, frame by frame (`frame`) or by the lane (`lane`, as the
 * relay does). `node dist/bench/answers.js [frame|lane]`; prints ns per answer, three runs.
 */
import type { Socket } from 'node:net';
import { Answers } from '../src/wire/answers.js';
import { AnswerMeter } from '../src/wire/metering.js';
import { pending } from '../src/wire/requests.js';
import { Run } from '../src/wire/run.js';
import { BackendCode, FrameReader, buildCommandComplete, buildReadyForQuery } from '../src/protocol/index.js';
import { ROW_DESCRIPTION, backendMessage, detachedHost } from './lib/answers-rig.js';

const ANSWERS = 2_000_000;
const way = process.argv[2] === 'frame' ? 'frame' : 'lane';

const answer = Buffer.concat([
  ROW_DESCRIPTION,
  backendMessage(BackendCode.DataRow, Buffer.from([0, 1, 0, 0, 0, 1, 0x30])),
  buildCommandComplete('SELECT 1'),
  buildReadyForQuery('I'),
]);

const toClient = new Run({ destroyed: false, write: () => true } as unknown as Socket);
const answers = new Answers(toClient, detachedHost(), new AnswerMeter({ statements: 0, rowsReturned: 0 } as never, () => undefined));
const reader = new FrameReader({ source: 'backend' });
const attached = () => true;

for (let run = 0; run < 3; run++) {
  // Fresh chunks, as sockets deliver them (a chunk is never seen twice).
  const chunks = Array.from({ length: 1000 }, () => Buffer.from(answer));
  const started = process.hrtime.bigint();
  for (let i = 0; i < ANSWERS; i++) {
    answers.request(pending([], undefined));
    const chunk = chunks[i % chunks.length]!;
    if (way === 'lane') answers.chunk(chunk, reader, answers.frame, attached);
    else reader.push(chunk, answers.frame);
    toClient.flush();
  }
  console.log(`${way}: ${(Number(process.hrtime.bigint() - started) / ANSWERS).toFixed(0)} ns per answer`);
}
