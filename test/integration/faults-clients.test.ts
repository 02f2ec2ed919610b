/**
 * Faults of wire clients, made for real on raw sockets: a client that asks for a large result and
 * never reads it (the proxy's memory stays bounded, the client is closed at the send timeout, and
 * its upstream backend — statement cancelled, session reset — serves the next client), and
 * clients that stop in the middle of start-up or of the SCRAM exchange (closed at the log-in
 * timeout). Each time a healthy client on another connection keeps working.
 */
import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendCode, FrameReader, buildQuery, buildSaslInitialResponse, buildStartupMessage, decodeErrorResponse } from '../../src/protocol/index.js';
import { openUpstreamSession, type UpstreamSession, type UpstreamTarget } from '../../src/upstream/session.js';
import { startTestService, type TestService } from '../helpers/service.js';

const SEND_TIMEOUT_MS = 1_500;
const STARTUP_TIMEOUT_MS = 1_000;
let svc: TestService;
let admin: pg.Client;
let healthy: pg.Client;
let user: { name: string; key: string };

beforeAll(async () => {
  svc = await startTestService({ pgSendTimeoutMs: SEND_TIMEOUT_MS, pgStartupTimeoutMs: STARTUP_TIMEOUT_MS });
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
  user = await svc.user('slow');
  const watcher = await svc.user('watcher');
  healthy = new pg.Client(svc.pgOptions(watcher.name, watcher.key));
  await healthy.connect();
});

afterAll(async () => {
  await healthy?.end().catch(() => undefined);
  await admin?.end();
  await svc?.stop();
});

function target(): UpstreamTarget {
  return { host: '127.0.0.1', port: svc.pgPort, database: svc.config.serviceDatabase, user: user.name, password: user.key };
}

/** Sends `sql` on a raw session and collects its answer up to ReadyForQuery: the DataRow values. */
/** The backend that ran the session's latest statement (pg_backend_pid() would show the client's own id). */
async function backendOf(session: UpstreamSession): Promise<number> {
  const text = `SELECT 'backend of ${randomUUID()}'`;
  await ask(session, text);
  return (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [text])).rows[0]!.pid;
}

function ask(session: UpstreamSession, sql: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const values: string[] = [];
    const onData = (chunk: Buffer) =>
      session.reader.push(chunk, (code, frame) => {
        if (code === BackendCode.ErrorResponse) reject(decodeErrorResponse(frame));
        if (code === BackendCode.DataRow) values.push(frame.subarray(11).toString());
        if (code === BackendCode.ReadyForQuery) {
          session.socket.off('data', onData);
          resolve(values);
        }
      });
    session.socket.on('data', onData);
    session.socket.write(buildQuery(sql));
  });
}

/** `process.memoryUsage()` figures that would grow with a result held in the proxy. */
function memory(): { rss: number; buffers: number } {
  const m = process.memoryUsage();
  return { rss: m.rss, buffers: m.arrayBuffers + m.external };
}

describe('a client that stops reading a large result', () => {
  it('costs bounded memory, is closed at the send timeout, and its backend serves the next client', async () => {
    const slow = await openUpstreamSession(target(), {});
    const pid = await backendOf(slow);
    expect(pid).toBeGreaterThan(0);
    const socket = slow.socket;
    socket.removeAllListeners('data');
    socket.pause();
    const before = memory();
    const sentAt = Date.now();
    // About 1 GB of answer, never read.
    socket.write(buildQuery("SELECT repeat('x', 1000) FROM generate_series(1, 1e6)"));

    let peak = before;
    const sampler = setInterval(() => {
      const m = memory();
      peak = { rss: Math.max(peak.rss, m.rss), buffers: Math.max(peak.buffers, m.buffers) };
    }, 50);
    try {
      // The statement runs, blocked on its send: the proxy stopped reading it.
      const state = async () => (await admin.query<{ state: string; wait: string | null; query: string }>('SELECT state, wait_event AS wait, query FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0];
      await expect.poll(state, { timeout: 5_000, interval: 50 }).toMatchObject({ state: 'active', wait: 'ClientWrite' });
      expect((await healthy.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);

      // After the send timeout the session is settled (statement cancelled) and pooled.
      await expect.poll(state, { timeout: SEND_TIMEOUT_MS + 8_000, interval: 100 }).toMatchObject({ state: 'idle' });
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS - 100);
    } finally {
      clearInterval(sampler);
    }
    // The answer held back in the proxy and the kernel stays small beside the 1 GB asked for.
    expect(peak.buffers - before.buffers).toBeLessThan(64 << 20);
    expect(peak.rss - before.rss).toBeLessThan(192 << 20);

    // What the client finds once it reads: the start of its answer, then the end of the connection.
    let received = 0;
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.on('error', () => undefined);
    socket.resume();
    await closed;
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(64 << 20);

    // The same backend serves the next client of the user.
    const next = await openUpstreamSession(target(), {});
    try {
      expect(await backendOf(next)).toBe(pid);
      expect(await ask(next, "SELECT current_setting('transaction_isolation')")).toEqual(['read committed']);
    } finally {
      next.socket.destroy();
    }
  }, 30_000);
});

/** A raw connection to the wire port and everything it receives until it closes. */
function rawClient(): { socket: Socket; frames: { code: number; frame: Buffer }[]; closed: Promise<number> } {
  const socket = connect({ host: '127.0.0.1', port: svc.pgPort });
  const frames: { code: number; frame: Buffer }[] = [];
  const reader = new FrameReader({ source: 'backend' });
  socket.on('data', (chunk: Buffer) => reader.push(chunk, (code, frame) => frames.push({ code, frame: Buffer.from(frame) })));
  socket.on('error', () => undefined);
  const opened = Date.now();
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - opened)));
  return { socket, frames, closed };
}

/** The FATAL the service closed with, and how long after connecting the connection closed. */
async function closedWith(client: ReturnType<typeof rawClient>): Promise<{ code: string; message: string; afterMs: number }> {
  const afterMs = await client.closed;
  const error = client.frames.find((f) => f.code === BackendCode.ErrorResponse);
  expect(error).toBeDefined();
  const e = decodeErrorResponse(error!.frame);
  return { code: e.code, message: e.message, afterMs };
}

describe('a client that never finishes start-up', () => {
  it('silent after its StartupMessage: closed at the log-in timeout, others unaffected', async () => {
    const client = rawClient();
    client.socket.write(buildStartupMessage({ user: user.name, database: svc.config.serviceDatabase }));
    expect((await healthy.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    const end = await closedWith(client);
    expect(client.frames[0]?.code).toBe(BackendCode.Authentication); // asked for SCRAM, got nothing back
    expect(end).toMatchObject({ code: '08006', message: `start-up did not finish within ${STARTUP_TIMEOUT_MS} ms` });
    expect(end.afterMs).toBeGreaterThanOrEqual(STARTUP_TIMEOUT_MS - 50);
    expect(end.afterMs).toBeLessThan(STARTUP_TIMEOUT_MS + 4_000);
  });

  it('silent in the middle of SCRAM (after SASLInitialResponse): closed at the log-in timeout, others unaffected', async () => {
    const client = rawClient();
    client.socket.write(buildStartupMessage({ user: user.name, database: svc.config.serviceDatabase }));
    await expect.poll(() => client.frames.length, { timeout: 2_000, interval: 10 }).toBeGreaterThan(0);
    client.socket.write(buildSaslInitialResponse('SCRAM-SHA-256', Buffer.from('n,,n=,r=abcdefghijklmnopqrstuvwx')));
    await expect.poll(() => client.frames.length, { timeout: 2_000, interval: 10 }).toBe(2); // AuthenticationSASLContinue
    const other = new pg.Client(svc.pgOptions(user.name, user.key));
    await other.connect();
    expect((await other.query('SELECT 2 AS ok')).rows).toEqual([{ ok: 2 }]);
    await other.end();
    const end = await closedWith(client);
    expect(end).toMatchObject({ code: '08006', message: `start-up did not finish within ${STARTUP_TIMEOUT_MS} ms` });
    expect(end.afterMs).toBeGreaterThanOrEqual(STARTUP_TIMEOUT_MS - 50);
    expect(end.afterMs).toBeLessThan(STARTUP_TIMEOUT_MS + 4_000);
    expect((await healthy.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
  });
});
