/**
 * Bad input and failures on the wire: malformed frames, absurd lengths, a dead upstream backend,
 * too many clients — the offender gets a SQLSTATE, everybody else keeps working.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildQuery, buildStartupMessage, decodeErrorResponse } from '../../src/protocol/index.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let healthy: pg.Client;

/** Sends `bytes` on a fresh socket; resolves with everything the server sent before closing. */
function exchange(bytes: Buffer[], port: number, waitMs = 3000): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket: Socket = tcpConnect({ host: '127.0.0.1', port });
    const got: Buffer[] = [];
    socket.on('data', (d) => got.push(d));
    socket.on('error', () => undefined);
    const done = () => resolve(Buffer.concat(got));
    socket.on('close', done);
    setTimeout(() => {
      socket.destroy();
      done();
    }, waitMs);
    socket.on('connect', () => {
      for (const b of bytes) socket.write(b);
    });
  });
}

/** The SQLSTATE of the first ErrorResponse in `data`. */
function firstError(data: Buffer): string | undefined {
  for (let i = 0; i + 5 <= data.length; ) {
    const code = data[i]!;
    const len = data.readInt32BE(i + 1);
    if (code === 0x45) return decodeErrorResponse(data.subarray(i, i + 1 + len)).code;
    i += 1 + len;
  }
  return undefined;
}

beforeAll(async () => {
  svc = await startTestService({ pgMaxConnections: 20, pgMaxMessageBytes: 64 * 1024 * 1024 });
  alice = await svc.user('alice');
  healthy = new pg.Client(svc.pgOptions(alice.name, alice.key));
  await healthy.connect();
});

afterAll(async () => {
  await healthy.end().catch(() => undefined);
  await svc.stop();
});

async function stillServing(): Promise<void> {
  expect((await healthy.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
}

describe('malformed input', () => {
  it('garbage instead of a startup packet: closed without an answer, as Postgres does', async () => {
    const data = await exchange([Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')], svc.pgPort);
    expect(data.length).toBe(0);
    await stillServing();
  });

  it('an unknown protocol version: 08P01', async () => {
    const packet = Buffer.alloc(8);
    packet.writeInt32BE(8, 0);
    packet.writeInt32BE(0x00020000, 4);
    expect(firstError(await exchange([packet], svc.pgPort))).toBe('08P01');
  });

  it('a startup length below the minimum: closed without an answer, as Postgres does', async () => {
    const packet = Buffer.from([0, 0, 0, 4, 0, 3, 0, 0]);
    expect((await exchange([packet], svc.pgPort)).length).toBe(0);
  });

  it('a client announcing a 1 GB message is refused on the header, without buffering', async () => {
    const before = process.memoryUsage().rss;
    const header = Buffer.alloc(5);
    header[0] = 0x51; // 'Q' before authentication: refused either as too long or as out of place
    header.writeInt32BE(1024 * 1024 * 1024, 1);
    const data = await exchange([buildStartupMessage({ user: alice.name, database: 'repobase' }), header, Buffer.alloc(64 * 1024)], svc.pgPort);
    expect(firstError(data)).toBe('08P01');
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
    await stillServing();
  });

  it('after login, a message over the configured maximum: 08P01', async () => {
    const sql = 'SELECT 1';
    const client = new pg.Client(svc.pgOptions(alice.name, alice.key));
    client.on('error', () => undefined);
    await client.connect();
    const stream = (client as unknown as { connection: { stream: Socket } }).connection.stream;
    const closed = new Promise<void>((resolve) => stream.on('close', () => resolve()));
    const got: Buffer[] = [];
    stream.on('data', (d: Buffer) => got.push(d));
    const header = Buffer.alloc(5);
    header[0] = 0x51;
    header.writeInt32BE(1024 * 1024 * 1024, 1);
    stream.write(header);
    await closed;
    expect(firstError(Buffer.concat(got))).toBe('08P01');
    void sql;
    await stillServing();
  });

  it('a query before authentication is a protocol violation', async () => {
    const data = await exchange([buildStartupMessage({ user: alice.name, database: 'repobase' }), buildQuery('SELECT 1')], svc.pgPort);
    expect(firstError(data)).toBe('08P01');
  });

  it('an unknown cancel key is ignored, and closes quietly', async () => {
    const cancel = Buffer.alloc(16);
    cancel.writeInt32BE(16, 0);
    cancel.writeInt32BE(80877102, 4);
    cancel.writeInt32BE(12345, 8);
    cancel.writeInt32BE(678, 12);
    const data = await exchange([cancel], svc.pgPort, 1000);
    expect(data.length).toBe(0);
    await stillServing();
  });
});

describe('failures', () => {
  it('an upstream backend killed mid-transaction: the client gets a FATAL with the upstream SQLSTATE, others go on', async () => {
    const victim = new pg.Client(svc.pgOptions(alice.name, alice.key));
    const errors: { code?: string }[] = [];
    victim.on('error', (e) => errors.push(e as { code?: string }));
    await victim.connect();
    await victim.query('BEGIN');
    const pid = (await svc.control.admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE usename = $1 AND state = 'idle in transaction'", [alice.name])).rows[0]!.pid;
    await svc.control.admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await expect.poll(() => errors.map((e) => e.code)).toContain('57P01');
    await expect(victim.query('SELECT 1')).rejects.toThrow();
    await stillServing();
  });

  it('past the connection limit: 53300', async () => {
    const extra: pg.Client[] = [];
    let refused: string | undefined;
    try {
      for (let i = 0; i < 25 && !refused; i++) {
        const c = new pg.Client(svc.pgOptions(alice.name, alice.key));
        c.on('error', () => undefined);
        await c.connect().then(
          () => extra.push(c),
          (e: { code?: string }) => (refused = e.code),
        );
      }
    } finally {
      for (const c of extra) await c.end().catch(() => undefined);
    }
    expect(refused).toBe('53300');
    await stillServing();
  });

  it('idle clients hold no upstream backend: a session is taken at the first statement', async () => {
    const bob = await svc.user('idler');
    const first = new pg.Client(svc.pgOptions(bob.name, bob.key));
    await first.connect(); // the first login learns the greeting from a real session
    const idle: pg.Client[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        const c = new pg.Client(svc.pgOptions(bob.name, bob.key));
        await c.connect();
        idle.push(c);
      }
      const backends = async () =>
        Number((await svc.control.admin.query('SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1', [bob.name])).rows[0].n);
      // One backend: the session that served the first login, pooled since; a client holds it
      // for its transaction only (pooling by transaction), so the next takes the same one.
      expect(await backends()).toBe(1);
      expect((await idle[3]!.query('SELECT current_user AS u')).rows[0].u).toBe(bob.name);
      expect(await backends()).toBe(1);
      expect((await idle[4]!.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      expect(await backends()).toBe(1);
    } finally {
      for (const c of [first, ...idle]) await c.end().catch(() => undefined);
    }
  });
});
