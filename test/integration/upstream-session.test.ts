/**
 * Upstream sessions read their sockets into one buffer of the process's (session.ts): what a
 * read hands out must be its own bytes, kept intact however many reads of any session follow.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BackendCode, buildQuery, decodeDataRow } from '../../src/protocol/index.js';
import { openUpstreamSession, type UpstreamSession, type UpstreamTarget } from '../../src/upstream/session.js';

let sessions: UpstreamSession[] = [];

function target(): UpstreamTarget {
  const url = new URL(inject('pgAdminUrl'));
  return { host: url.hostname, port: Number(url.port), database: url.pathname.slice(1) || 'postgres', user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
}

/** Sends `sql` and resolves with the DataRow frames of its answer, as they were handed out (not copied). */
function rowFrames(session: UpstreamSession, sql: string): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const rows: Buffer[] = [];
    session.onGone = () => reject(new Error('the session closed'));
    session.sink = (chunk) =>
      session.reader.push(chunk, (code, frame) => {
        if (code === BackendCode.DataRow) rows.push(frame);
        else if (code === BackendCode.ErrorResponse) reject(new Error(frame.toString('utf8', 5)));
        else if (code === BackendCode.ReadyForQuery) resolve(rows);
      });
    session.socket.write(buildQuery(sql));
  });
}

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

beforeAll(async () => {
  sessions = await Promise.all([1, 2, 3].map(() => openUpstreamSession(target(), {})));
});

afterAll(() => {
  for (const s of sessions) s.socket.destroy();
});

describe('upstream session reads', () => {
  it('hand out bytes that later reads of any session leave intact', async () => {
    const first = await Promise.all(sessions.map((s, i) => rowFrames(s, `SELECT repeat('${'abc'[i]}', 200) || g FROM generate_series(1, 50) g`)));
    // Many more reads, on every session, after the first answers were handed out.
    for (let round = 0; round < 20; round++) {
      await Promise.all(sessions.map((s) => rowFrames(s, `SELECT repeat('z', 300) FROM generate_series(1, 20)`)));
    }
    first.forEach((rows, i) => {
      expect(rows.map((f) => decodeDataRow(f)[0])).toEqual(Array.from({ length: 50 }, (_, g) => 'abc'[i]!.repeat(200) + (g + 1)));
    });
  });

  it('deliver an answer spread over many reads whole, while other sessions read too', async () => {
    const [big, ...others] = await Promise.all([
      rowFrames(sessions[0]!, 'SELECT i, md5(i::text) FROM generate_series(1, 50000) i'),
      ...sessions.slice(1).map((s) => rowFrames(s, "SELECT repeat('q', 5000) FROM generate_series(1, 200)")),
    ]);
    expect(big).toHaveLength(50_000);
    big.forEach((frame, n) => expect(decodeDataRow(frame)).toEqual([String(n + 1), md5(String(n + 1))]));
    for (const rows of others) expect(rows.every((f) => decodeDataRow(f)[0] === 'q'.repeat(5000))).toBe(true);
  });
});
