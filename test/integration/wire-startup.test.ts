/**
 * Start-up as Postgres does it, where drivers notice the difference: a client that leaves before
 * its startup packet is let go without an answer; TLS negotiated directly (Postgres 17's
 * `sslnegotiation=direct`, ALPN `postgresql`) as well as after SSLRequest; the database names
 * clients pick by default reach the service database; the greeting comes in one write.
 */
import { execFile } from 'node:child_process';
import { connect as tcpConnect } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildStartupMessage, buildTerminate, decodeErrorResponse } from '../../src/protocol/index.js';
import { login } from '../../src/upstream/session.js';
import { startTestService, type TestService } from '../helpers/service.js';

const run = promisify(execFile);
let svc: TestService;
let alice: { name: string; key: string };

/** Writes `bytes` on a fresh TCP connection; resolves with all the server sent before it closed. */
function exchange(bytes: Buffer[], end: boolean): Promise<{ data: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port: svc.pgPort });
    const got: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ data: Buffer.concat(got), closed: false });
    }, 3000);
    socket.on('data', (d) => got.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data: Buffer.concat(got), closed: true });
    });
    socket.on('connect', () => {
      for (const b of bytes) socket.write(b);
      if (end) socket.end();
    });
  });
}

/** A TLS connection made at once (no SSLRequest), offering `alpn`. */
function directTls(alpn: string[] | undefined): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: svc.pgPort, rejectUnauthorized: false, ...(alpn && { ALPNProtocols: alpn }) });
    socket.once('secureConnect', () => resolve(socket));
    socket.once('error', reject);
  });
}

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
});

afterAll(async () => {
  await svc?.stop();
});

describe('leaving before start-up', () => {
  it('a Terminate before the startup packet closes the connection without an answer', async () => {
    const { data, closed } = await exchange([buildTerminate()], false);
    expect(closed).toBe(true);
    expect(data.length).toBe(0);
    // A driver ended while connecting: Terminate, then the startup packet it had queued.
    const both = await exchange([buildTerminate(), buildStartupMessage({ user: alice.name, database: 'repobase' })], false);
    expect(both).toEqual({ data: Buffer.alloc(0), closed: true });
  });

  it('a connection closed before any byte, or halfway through the startup packet, gets no answer', async () => {
    expect(await exchange([], true)).toEqual({ data: Buffer.alloc(0), closed: true });
    const packet = buildStartupMessage({ user: alice.name, database: 'repobase' });
    expect(await exchange([packet.subarray(0, 10)], true)).toEqual({ data: Buffer.alloc(0), closed: true });
  });

  it('node-postgres ending a client before it connected: no error reaches the driver, the service goes on', async () => {
    const c = new pg.Client(svc.pgOptions(alice.name, alice.key));
    const errors: unknown[] = [];
    c.on('error', (err) => errors.push(err));
    void c.connect().catch(() => undefined); // pg leaves this promise pending when ended first
    await c.end(); // pg sends Terminate before the startup packet, then waits for the close
    expect(errors).toEqual([]);
    const ok = new pg.Client(svc.pgOptions(alice.name, alice.key));
    await ok.connect();
    expect((await ok.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await ok.end();
  });
});

describe('direct TLS (sslnegotiation=direct)', () => {
  it('logs in and queries over a TLS connection made at once with ALPN "postgresql"', async () => {
    const socket = await directTls(['postgresql']);
    expect(socket.alpnProtocol).toBe('postgresql');
    const session = await login(socket, { host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: alice.key }, {});
    expect(session.parameters.get('server_version')).toMatch(/^17/);
    socket.destroy();
  });

  it('refuses a direct TLS connection without ALPN, as Postgres does', async () => {
    const socket = await directTls(undefined);
    const got: Buffer[] = [];
    socket.on('data', (d) => got.push(d));
    await new Promise<void>((resolve) => {
      socket.on('close', () => resolve());
      socket.write(buildStartupMessage({ user: alice.name, database: 'repobase' }));
    });
    const data = Buffer.concat(got);
    expect(String.fromCharCode(data[0]!)).toBe('E');
    const err = decodeErrorResponse(data.subarray(0, 1 + data.readInt32BE(1)));
    expect(err.code).toBe('08P01');
    expect(err.message).toContain('ALPN');
  });

  it('node-postgres with sslnegotiation=direct', async () => {
    const c = new pg.Client({ ...svc.pgOptions(alice.name, alice.key), ssl: { rejectUnauthorized: false }, sslnegotiation: 'direct' } as pg.ClientConfig);
    await c.connect();
    expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await c.end();
  });

  it('still negotiates TLS after SSLRequest', async () => {
    const c = new pg.Client({ ...svc.pgOptions(alice.name, alice.key), ssl: { rejectUnauthorized: false } });
    await c.connect();
    expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await c.end();
  });
});

describe('default database names', () => {
  for (const database of ['postgres', 'template1', 'own user name']) {
    it(`"${database}" reaches the service database`, async () => {
      const c = new pg.Client({ ...svc.pgOptions(alice.name, alice.key), database: database === 'own user name' ? alice.name : database });
      await c.connect();
      expect((await c.query('SELECT current_user AS u')).rows).toEqual([{ u: alice.name }]);
      await c.end();
    });
  }

  it('psql with no database name connects (libpq defaults to the user name)', async () => {
    const { stdout } = await run('psql', ['-h', '127.0.0.1', '-p', String(svc.pgPort), '-U', alice.name, '-XAtc', 'SELECT current_user'], {
      env: { ...process.env, PGPASSWORD: alice.key, PGDATABASE: '' },
    });
    expect(stdout.trim()).toBe(alice.name);
  });

  it('any other name is still 3D000', async () => {
    const c = new pg.Client({ ...svc.pgOptions(alice.name, alice.key), database: 'nope' });
    await expect(c.connect()).rejects.toMatchObject({ code: '3D000' });
  });
});

describe('the greeting', () => {
  it('sends the greeting in one write, as Postgres does: every ParameterStatus, the BackendKeyData and ReadyForQuery in one read', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const socket = tcpConnect({ host: '127.0.0.1', port: svc.pgPort });
      await new Promise((r) => socket.once('connect', r));
      const chunks: Buffer[] = [];
      socket.on('data', (d: Buffer) => chunks.push(d));
      const session = await login(socket, { host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: alice.key }, {});
      const last = chunks.at(-1)!;
      const codes: string[] = [];
      for (let i = 0; i + 5 <= last.length; i += 1 + last.readInt32BE(i + 1)) codes.push(String.fromCharCode(last[i]!));
      session.socket.destroy();
      // The last read of the login ends with K and Z and holds every report before them (an
      // AuthenticationOk may have come along).
      expect(codes.slice(-2)).toEqual(['K', 'Z']);
      expect(codes.filter((c) => c === 'S').length).toBe(session.parameters.size);
    }
  });
});
