import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { inject, describe, expect, it } from 'vitest';
import * as c from '../../../src/wire/codec/index.js';

class Conn {
  private frames: { code: number; frame: Buffer }[] = [];
  private waiters: (() => void)[] = [];
  private reader = new c.FrameReader({ source: 'backend' });
  constructor(readonly sock: Socket) {
    sock.on('data', (chunk: Buffer) => {
      this.reader.push(chunk, (code, frame) => this.frames.push({ code, frame }));
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(port: number): Promise<Conn> {
    const sock = connect(port, '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', () => r()));
    return new Conn(sock);
  }
  async next(): Promise<{ code: number; frame: Buffer }> {
    while (this.frames.length === 0) await new Promise<void>((r) => this.waiters.push(r));
    return this.frames.shift()!;
  }
  async until(code: number): Promise<{ code: number; frame: Buffer }[]> {
    const out = [];
    for (;;) { const f = await this.next(); out.push(f); if (f.code === code) return out; }
  }
}

const hmac = (k: Buffer, s: string | Buffer): Buffer => createHmac('sha256', k).update(s).digest();

describe('codec against a real Postgres', () => {
  it('logs in with SCRAM, queries, decodes errors and notices, cancels', async () => {
    const url = new URL(inject('pgAdminUrl'));
    const port = Number(url.port);
    const password = decodeURIComponent(url.password);
    const conn = await Conn.open(port);
    conn.sock.write(c.buildStartupMessage({ user: 'postgres', database: 'postgres', client_encoding: 'UTF8' }));
    const sasl = c.decodeAuthentication((await conn.next()).frame);
    expect(sasl).toEqual({ kind: 'sasl', mechanisms: ['SCRAM-SHA-256'] });
    const nonce = randomBytes(18).toString('base64');
    const clientFirstBare = `n=,r=${nonce}`;
    conn.sock.write(c.buildSaslInitialResponse('SCRAM-SHA-256', Buffer.from(`n,,${clientFirstBare}`)));
    const cont = c.decodeAuthentication((await conn.next()).frame);
    if (cont.kind !== 'sasl_continue') expect.fail(cont.kind);
    const serverFirst = cont.data.toString();
    const attrs = Object.fromEntries(serverFirst.split(',').map((kv) => [kv[0], kv.slice(2)]));
    const salted = pbkdf2Sync(password, Buffer.from(attrs['s']!, 'base64'), Number(attrs['i']), 32, 'sha256');
    const clientKey = hmac(salted, 'Client Key');
    const withoutProof = `c=biws,r=${attrs['r']}`;
    const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
    const sig = hmac(createHash('sha256').update(clientKey).digest(), authMessage);
    const proof = Buffer.from(clientKey.map((b, i) => b ^ sig[i]!));
    conn.sock.write(c.buildSaslResponse(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`)));
    const fin = c.decodeAuthentication((await conn.next()).frame);
    if (fin.kind !== 'sasl_final') expect.fail(fin.kind);
    expect(fin.data.toString()).toBe(`v=${hmac(hmac(salted, 'Server Key'), authMessage).toString('base64')}`);
    expect(c.decodeAuthentication((await conn.next()).frame)).toEqual({ kind: 'ok' });
    const startup = await conn.until(c.BackendCode.ReadyForQuery);
    const params = startup.filter((f) => f.code === c.BackendCode.ParameterStatus).map((f) => c.decodeParameterStatus(f.frame));
    expect(params.find((p) => p.name === 'client_encoding')?.value).toBe('UTF8');
    const key = c.decodeBackendKeyData(startup.find((f) => f.code === c.BackendCode.BackendKeyData)!.frame);
    expect(c.decodeReadyForQuery(startup.at(-1)!.frame)).toBe('I');

    // Errors: decoded, then re-encoded byte for byte.
    conn.sock.write(c.buildQuery('CREATE TEMP TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1); INSERT INTO t VALUES (1)'));
    let got = await conn.until(c.BackendCode.ReadyForQuery);
    const errFrame = got.find((f) => f.code === c.BackendCode.ErrorResponse)!.frame;
    const err = c.decodeErrorResponse(errFrame);
    console.info(err, err.extra);
    expect(err.code).toBe('23505');
    expect(err.extra).toMatchObject({ table: 't', constraint: 't_pkey', routine: '_bt_check_unique' });
    expect(c.buildErrorResponse(err).equals(errFrame)).toBe(true);
    expect(c.decodeReadyForQuery(got.at(-1)!.frame)).toBe('I');

    conn.sock.write(c.buildQuery('SELECT 1 FROM nope WHERE x'));
    got = await conn.until(c.BackendCode.ReadyForQuery);
    const e2Frame = got.find((f) => f.code === c.BackendCode.ErrorResponse)!.frame;
    const e2 = c.decodeErrorResponse(e2Frame);
    expect([e2.code, e2.position]).toEqual(['42P01', 15]);
    expect(c.buildErrorResponse(e2).equals(e2Frame)).toBe(true);

    conn.sock.write(c.buildQuery("DO $$BEGIN RAISE INFO 'hi' USING HINT = 'h'; RAISE WARNING 'w'; END$$"));
    got = await conn.until(c.BackendCode.ReadyForQuery);
    const notices = got.filter((f) => f.code === c.BackendCode.NoticeResponse);
    const [info, warning] = notices.map((f) => c.decodeNoticeResponse(f.frame));
    expect([info?.severity, info?.extra?.['severity'], info?.hint, warning?.severity]).toEqual(['NOTICE', 'INFO', 'h', 'WARNING']);
    notices.forEach((f) => expect(c.buildNoticeResponse(c.decodeNoticeResponse(f.frame)).equals(f.frame)).toBe(true));
    expect(c.decodeCommandComplete(got.find((f) => f.code === c.BackendCode.CommandComplete)!.frame)).toBe('DO');

    // A 4 MB row arrives in many chunks; extended protocol built by us.
    conn.sock.write(Buffer.concat([
      c.buildParse('s1', "SELECT repeat('x', $1::int)", [23]),
      c.buildBind({ portal: '', statement: 's1', paramFormats: [], params: [Buffer.from('4000000')], resultFormats: [] }),
      c.buildExecute('', 0),
      c.buildSync(),
    ]));
    got = await conn.until(c.BackendCode.ReadyForQuery);
    expect(got.map((f) => String.fromCharCode(f.code)).join('')).toBe('12DCZ');
    expect(got[2]!.frame.length).toBe(5 + 2 + 4 + 4_000_000);

    // Cancel a sleeping query from a second connection.
    conn.sock.write(c.buildQuery('SELECT pg_sleep(30)'));
    await new Promise((r) => setTimeout(r, 200));
    const canceller = connect(port, '127.0.0.1');
    canceller.end(c.buildCancelRequest(key.processId, key.secretKey));
    got = await conn.until(c.BackendCode.ReadyForQuery);
    expect(c.decodeErrorResponse(got.find((f) => f.code === c.BackendCode.ErrorResponse)!.frame).code).toBe('57014');

    conn.sock.end(c.buildTerminate());
  });

  it('Postgres refuses our SSLRequest or answers it, and a bad startup gets 08P01/0A000', async () => {
    const url = new URL(inject('pgAdminUrl'));
    const sock = connect(Number(url.port), '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(c.buildSslRequest());
    const answer = await new Promise<Buffer>((r) => sock.once('data', r));
    expect(['S', 'N']).toContain(answer.toString());
    sock.destroy();
    const conn = await Conn.open(Number(url.port));
    conn.sock.write(c.buildStartupMessage({ user: 'postgres' }, 2 << 16));
    const e = c.decodeErrorResponse((await conn.next()).frame);
    console.info(e.code, e.message);
  });
});
