import { describe, expect, it } from 'vitest';
import { SqlState } from '../../../src/shared/errors.js';
import {
  buildAuthenticationOk,
  buildBind,
  buildCommandComplete,
  buildExecute,
  buildGssEncRequest,
  buildParse,
  buildPasswordMessage,
  buildQuery,
  buildReadyForQuery,
  buildSslRequest,
  buildStartupMessage,
  buildSync,
  buildTerminate,
  FrameReader,
  FrontendCode,
} from '../../../src/protocol/index.js';
import { pgErrorOf, rawStartup, rawTyped, readAll, type Frame } from './helpers.js';

const client = { source: 'frontend', startup: true } as const;
const typedClient = { source: 'frontend', startup: false } as const;

/** A client session: startup-phase messages, then typed ones, one of them 100 KB. */
function clientStream(): { stream: Buffer; expected: Frame[] } {
  const big = `SELECT '${'x'.repeat(100 * 1024)}'`;
  const parts: [number, Buffer][] = [
    [FrontendCode.Startup, buildGssEncRequest()],
    [FrontendCode.Startup, buildSslRequest()],
    [FrontendCode.Startup, buildStartupMessage({ user: 'alice', database: 'alice/sales' })],
    [FrontendCode.Password, buildPasswordMessage('rb_key_123')],
    [FrontendCode.Query, buildQuery('SELECT 1')],
    [FrontendCode.Parse, buildParse('s1', big, [23])],
    [FrontendCode.Bind, buildBind({ portal: '', statement: 's1', paramFormats: [], params: [Buffer.from('7'), null], resultFormats: [1] })],
    [FrontendCode.Execute, buildExecute('', 0)],
    [FrontendCode.Sync, buildSync()],
    [FrontendCode.Terminate, buildTerminate()],
  ];
  return {
    stream: Buffer.concat(parts.map(([, bytes]) => bytes)),
    expected: parts.map(([code, bytes]) => ({ code, bytes })),
  };
}

/**
 * The SSLRequest and GSSENCRequest must each be pushed alone (the client waits for the answer),
 * so the split tests start after them and keep the rest of the stream in startup mode.
 */
function afterEncryptionRequests(): { stream: Buffer; expected: Frame[] } {
  const { stream, expected } = clientStream();
  return { stream: stream.subarray(16), expected: expected.slice(2) };
}

describe('FrameReader: chunking', () => {
  it('yields many messages of one chunk as views into it, not copies', () => {
    const messages = Array.from({ length: 1000 }, (_, i) => buildQuery(`SELECT ${i}`));
    const chunk = Buffer.concat(messages);
    const reader = new FrameReader(typedClient);
    const frames: Buffer[] = [];
    reader.push(chunk, (code, frame) => {
      expect(code).toBe(FrontendCode.Query);
      frames.push(frame);
    });
    expect(frames).toHaveLength(1000);
    let offset = chunk.byteOffset;
    frames.forEach((frame, i) => {
      expect(frame.buffer).toBe(chunk.buffer);
      expect(frame.byteOffset).toBe(offset);
      expect(frame.equals(messages[i] ?? Buffer.alloc(0))).toBe(true);
      offset += frame.length;
    });
    expect(reader.bufferedBytes).toBe(0);
  });

  it('reads the same frames whatever two chunks the stream is split into', () => {
    const { stream, expected } = afterEncryptionRequests();
    for (let at = 0; at <= stream.length; at++) {
      // Compared in the handler, not copied out: 100k splits of a 100 KB stream.
      const reader = new FrameReader(client);
      let count = 0;
      const check = (code: number, frame: Buffer): void => {
        const want = expected[count++];
        if (code !== want?.code || !frame.equals(want.bytes)) {
          expect.fail(`split at ${at}: frame ${count - 1} differs`);
        }
      };
      reader.push(stream.subarray(0, at), check);
      reader.push(stream.subarray(at), check);
      if (count !== expected.length) expect.fail(`split at ${at}: ${count} frames`);
      expect(reader.bufferedBytes).toBe(0);
    }
  });

  it('reads the same frames fed one byte at a time, encryption requests included', () => {
    const { stream, expected } = clientStream();
    const bytes = Array.from(stream, (_, i) => stream.subarray(i, i + 1));
    expect(readAll(bytes, client)).toEqual(expected);
  });

  it('never rewrites a frame it handed out (a relay may still have it queued)', () => {
    const { stream, expected } = afterEncryptionRequests();
    const reader = new FrameReader(client);
    const held: Buffer[] = [];
    for (let pos = 0; pos < stream.length; pos += 7) {
      reader.push(stream.subarray(pos, pos + 7), (_code, frame) => held.push(frame));
    }
    expect(held.map((frame) => Buffer.from(frame))).toEqual(expected.map((f) => f.bytes));
  });

  it('assembles a straddling message into one buffer of its exact size', () => {
    const message = buildQuery('SELECT 42');
    const reader = new FrameReader(typedClient);
    const frames: Buffer[] = [];
    reader.push(message.subarray(0, 3), (_c, f) => frames.push(f));
    expect(reader.bufferedBytes).toBe(3);
    reader.push(message.subarray(3, 9), (_c, f) => frames.push(f));
    expect(reader.bufferedBytes).toBe(9);
    reader.push(message.subarray(9), (_c, f) => frames.push(f));
    expect(frames).toEqual([message]);
    expect(reader.bufferedBytes).toBe(0);
  });

  it('holds only the bytes received, not the length a header announces', () => {
    const reader = new FrameReader(typedClient);
    const header = Buffer.alloc(5 + 10);
    header.write('d', 0, 'latin1');
    header.writeInt32BE(200 * 1024 * 1024, 1); // under the 256 MiB limit
    const before = process.memoryUsage().arrayBuffers;
    reader.push(header, () => expect.fail('incomplete'));
    expect(reader.bufferedBytes).toBe(15);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1024 * 1024);
  });

  it('applies a lowered limit to the next header (small before authentication)', () => {
    const reader = new FrameReader(typedClient);
    reader.setMaxMessageBytes(64 * 1024);
    const err = pgErrorOf(() => reader.push(rawTyped('p', Buffer.alloc(64 * 1024)), () => undefined));
    expect(err.message).toBe(`message of ${64 * 1024 + 5} bytes exceeds the limit of ${64 * 1024} bytes`);
  });

  it('switches to typed messages right after the StartupMessage, within one chunk', () => {
    const chunk = Buffer.concat([buildStartupMessage({ user: 'alice' }), buildQuery('SELECT 1')]);
    const reader = new FrameReader(client);
    const codes: number[] = [];
    expect(reader.inStartupPhase).toBe(true);
    reader.push(chunk, (code) => codes.push(code));
    expect(codes).toEqual([FrontendCode.Startup, FrontendCode.Query]);
    expect(reader.inStartupPhase).toBe(false);
  });

  it('stays in the startup phase after SSLRequest, GSSENCRequest and CancelRequest', () => {
    const reader = new FrameReader(client);
    for (const frame of [buildSslRequest(), buildGssEncRequest(), rawStartup(80877102, Buffer.alloc(8))]) {
      reader.push(frame, () => undefined);
      expect(reader.inStartupPhase).toBe(true);
    }
  });

  it('frames a backend stream', () => {
    const messages = [
      buildAuthenticationOk(),
      rawTyped('T', Buffer.alloc(30, 1)),
      rawTyped('D', Buffer.alloc(12, 2)),
      buildCommandComplete('SELECT 1'),
      buildReadyForQuery('I'),
    ];
    const frames = readAll([Buffer.concat(messages)], { source: 'backend' });
    expect(frames.map((f) => String.fromCharCode(f.code)).join('')).toBe('RTDCZ');
    expect(frames.map((f) => f.bytes)).toEqual(messages);
  });
});

describe('FrameReader: malformed input', () => {
  function refuse(options: ConstructorParameters<typeof FrameReader>[0], ...chunks: Buffer[]): string {
    const reader = new FrameReader(options);
    const frames: number[] = [];
    const err = pgErrorOf(() => {
      for (const chunk of chunks) reader.push(chunk, (code) => frames.push(code));
    });
    expect(err.code).toBe(SqlState.ProtocolViolation);
    expect(err.severity).toBe('FATAL');
    expect(reader.bufferedBytes).toBe(0);
    // The stream position is lost: the reader refuses everything after.
    expect(pgErrorOf(() => reader.push(buildSync(), () => undefined)).code).toBe('08P01');
    return err.message;
  }
  const header = (code: string, length: number): Buffer => {
    const buf = Buffer.alloc(5);
    buf.write(code, 0, 'latin1');
    buf.writeInt32BE(length, 1);
    return buf;
  };

  it.each([3, 0, -1, -2147483648])('refuses a typed length of %i', (length) => {
    expect(refuse(typedClient, header('Q', length))).toBe(
      `invalid message length ${length} for message type 0x51 ('Q')`,
    );
  });

  it('refuses a 1 GB message on its five header bytes alone, buffering nothing', () => {
    const before = process.memoryUsage().arrayBuffers;
    expect(refuse(typedClient, header('Q', 1024 ** 3))).toBe(
      `message of ${1024 ** 3 + 1} bytes exceeds the limit of ${256 * 1024 ** 2} bytes`,
    );
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1024 * 1024);
  });

  it('refuses an oversized header even when it arrives in pieces', () => {
    const big = header('d', 1024 ** 3);
    expect(refuse(typedClient, big.subarray(0, 2), big.subarray(2))).toMatch(/exceeds the limit/);
  });

  it('applies the configured maximum to the whole message', () => {
    const options = { ...typedClient, maxMessageBytes: 1000 };
    const reader = new FrameReader(options);
    const fits = rawTyped('Q', Buffer.alloc(995));
    reader.push(fits, (_code, frame) => expect(frame.length).toBe(1000));
    expect(refuse(options, rawTyped('Q', Buffer.alloc(996)))).toBe(
      'message of 1001 bytes exceeds the limit of 1000 bytes',
    );
  });

  it.each([0, 4, 7, 10_001, 1024 ** 3])('refuses a startup length of %i', (length) => {
    const buf = Buffer.alloc(8);
    buf.writeInt32BE(length, 0);
    buf.writeInt32BE(196608, 4);
    expect(refuse(client, buf)).toBe(`invalid length of startup packet: ${length}`);
  });

  it('refuses unknown protocol versions and request codes', () => {
    expect(refuse(client, rawStartup(2 << 16))).toBe(
      'unsupported frontend protocol 2.0: server supports 3.0',
    );
    expect(refuse(client, rawStartup((1234 << 16) | 9999))).toBe(
      'unsupported frontend protocol 1234.9999: server supports 3.0',
    );
  });

  it('refuses garbage such as an HTTP request on the Postgres port', () => {
    expect(refuse(client, Buffer.from('GET / HTTP/1.1\r\n\r\n'))).toMatch(
      /^invalid length of startup packet: /,
    );
  });

  it.each([
    ['a backend code from a client', typedClient, 'Z', "invalid message type 0x5a ('Z')"],
    ['a NUL code from a client', typedClient, '\0', 'invalid message type 0x00'],
    ['a frontend code from a server', { source: 'backend' } as const, 'Q', "invalid message type 0x51 ('Q')"],
  ] as const)('refuses %s on its first byte', (_name, options, code, message) => {
    expect(refuse(options, Buffer.from(code, 'latin1'), header(code, 4).subarray(1))).toBe(message);
  });

  it('refuses data pipelined behind an SSLRequest or GSSENCRequest (CVE-2021-23214)', () => {
    for (const request of [buildSslRequest(), buildGssEncRequest()]) {
      const stuffed = Buffer.concat([request, buildStartupMessage({ user: 'mallory' })]);
      expect(refuse(client, stuffed)).toBe('received unencrypted data after encryption request');
      expect(refuse(client, stuffed.subarray(0, 5), stuffed.subarray(5))).toBe(
        'received unencrypted data after encryption request',
      );
    }
  });

  it('does not hand out the SSLRequest when refusing what follows it', () => {
    const reader = new FrameReader(client);
    const codes: number[] = [];
    const stuffed = Buffer.concat([buildSslRequest(), buildQuery('x')]);
    pgErrorOf(() => reader.push(stuffed, (code) => codes.push(code)));
    expect(codes).toEqual([]);
  });

  it('is unusable after its handler threw, since the position in the stream is lost', () => {
    const reader = new FrameReader(typedClient);
    expect(() =>
      reader.push(buildSync(), () => {
        throw new Error('handler failed');
      }),
    ).toThrow('handler failed');
    const err = pgErrorOf(() => reader.push(buildSync(), () => undefined));
    expect(err.message).toBe('frame reader used after an earlier failure');
  });
});
