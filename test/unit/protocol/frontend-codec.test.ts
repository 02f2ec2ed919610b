import { describe, expect, it } from 'vitest';
import { SqlState } from '../../../src/shared/errors.js';
import {
  buildBind,
  buildCancelRequest,
  buildClose,
  buildCopyData,
  buildCopyDone,
  buildCopyFail,
  buildDescribe,
  buildExecute,
  buildFlush,
  buildFunctionCall,
  buildGssEncRequest,
  buildParse,
  buildPasswordMessage,
  buildQuery,
  buildSaslInitialResponse,
  buildSaslResponse,
  buildSslRequest,
  buildStartupMessage,
  buildSync,
  buildTerminate,
  decodeFrontend,
  decodeParse,
  decodeQuery,
  decodeStartup,
  FrameReader,
  type FrontendMessage,
  type PasswordPhase,
} from '../../../src/protocol/index.js';
import { pgErrorOf, rawStartup, rawTyped } from './helpers.js';

/** Frames `bytes` with a real reader and decodes the one message in it. */
function roundTrip(bytes: Buffer, phase: PasswordPhase = 'none', startup = false): FrontendMessage {
  const reader = new FrameReader({ source: 'frontend', startup });
  const messages: FrontendMessage[] = [];
  reader.push(bytes, (code, frame) => messages.push(decodeFrontend(code, frame, phase)));
  expect(messages).toHaveLength(1);
  return messages[0] ?? expect.fail('no message');
}

describe('frontend messages: build, frame, decode', () => {
  it('StartupMessage, with every parameter and a null-prototype map', () => {
    const message = roundTrip(
      buildStartupMessage({ user: 'alice', database: 'alice/sales', application_name: 'psql ✓', __proto__x: '' }),
      'none',
      true,
    );
    expect(message).toEqual({
      kind: 'startup',
      protocol: 196608,
      params: { user: 'alice', database: 'alice/sales', application_name: 'psql ✓', __proto__x: '' },
    });
  });

  it('keeps a client-chosen __proto__ parameter as a plain key', () => {
    const body = Buffer.from('__proto__\0evil\0user\0bob\0\0', 'latin1');
    const message = decodeStartup(rawStartup(196608, body));
    if (message.kind !== 'startup') expect.fail(message.kind);
    expect(Object.getPrototypeOf(message.params)).toBe(null);
    expect(message.params['__proto__']).toBe('evil');
    expect(Object.keys(message.params)).toEqual(['__proto__', 'user']);
  });

  it('StartupMessage with a newer minor version is returned as sent', () => {
    expect(roundTrip(buildStartupMessage({ user: 'a' }, 196610), 'none', true)).toMatchObject({
      kind: 'startup',
      protocol: 196610,
    });
  });

  it.each([
    ['SSLRequest', buildSslRequest(), { kind: 'ssl_request' }],
    ['GSSENCRequest', buildGssEncRequest(), { kind: 'gssenc_request' }],
    ['CancelRequest', buildCancelRequest(4242, -123456789), { kind: 'cancel_request', processId: 4242, secretKey: -123456789 }],
    ['CancelRequest (unsigned key)', buildCancelRequest(1, 0xfedcba98), { kind: 'cancel_request', processId: 1, secretKey: 0xfedcba98 | 0 }],
  ] as const)('%s', (_name, bytes, expected) => {
    expect(roundTrip(bytes, 'none', true)).toEqual(expected);
  });

  it.each([
    ['PasswordMessage', buildPasswordMessage('rb_sécret'), 'password', { kind: 'password', password: 'rb_sécret' }],
    ['SASLInitialResponse', buildSaslInitialResponse('SCRAM-SHA-256', Buffer.from('n,,n=,r=abc')), 'sasl_initial',
      { kind: 'sasl_initial_response', mechanism: 'SCRAM-SHA-256', data: Buffer.from('n,,n=,r=abc') }],
    ['SASLInitialResponse without data', buildSaslInitialResponse('SCRAM-SHA-256', null), 'sasl_initial',
      { kind: 'sasl_initial_response', mechanism: 'SCRAM-SHA-256', data: null }],
    ['SASLResponse', buildSaslResponse(Buffer.from('c=biws,r=abc,p=xyz')), 'sasl',
      { kind: 'sasl_response', data: Buffer.from('c=biws,r=abc,p=xyz') }],
  ] as const)('%s', (_name, bytes, phase, expected) => {
    expect(roundTrip(bytes, phase)).toEqual(expected);
  });

  it.each([
    ['Query', buildQuery('SELECT * FROM "alice/sales"."Orders 2024" -- é'), { kind: 'query', sql: 'SELECT * FROM "alice/sales"."Orders 2024" -- é' }],
    ['empty Query', buildQuery(''), { kind: 'query', sql: '' }],
    ['Parse', buildParse('s1', 'SELECT $1::int, $2', [23, 0, 4294967295]),
      { kind: 'parse', name: 's1', sql: 'SELECT $1::int, $2', paramTypes: [23, 0, 4294967295] }],
    ['Bind', buildBind({ portal: 'p', statement: 's1', paramFormats: [0, 1], params: [Buffer.from('42'), null, Buffer.alloc(0)], resultFormats: [1] }),
      { kind: 'bind', portal: 'p', statement: 's1', paramFormats: [0, 1], params: [Buffer.from('42'), null, Buffer.alloc(0)], resultFormats: [1] }],
    ['Describe statement', buildDescribe('S', 's1'), { kind: 'describe', target: 'S', name: 's1' }],
    ['Describe portal', buildDescribe('P', ''), { kind: 'describe', target: 'P', name: '' }],
    ['Execute', buildExecute('p', 100), { kind: 'execute', portal: 'p', maxRows: 100 }],
    ['Close', buildClose('P', 'p'), { kind: 'close', target: 'P', name: 'p' }],
    ['Sync', buildSync(), { kind: 'sync' }],
    ['Flush', buildFlush(), { kind: 'flush' }],
    ['Terminate', buildTerminate(), { kind: 'terminate' }],
    ['CopyData', buildCopyData(Buffer.from('1\tone\n')), { kind: 'copy_data', data: Buffer.from('1\tone\n') }],
    ['CopyDone', buildCopyDone(), { kind: 'copy_done' }],
    ['CopyFail', buildCopyFail('aborted by user'), { kind: 'copy_fail', message: 'aborted by user' }],
    ['FunctionCall', buildFunctionCall({ functionOid: 1598, argFormats: [1], args: [Buffer.from([0, 0, 0, 1]), null], resultFormat: 1 }),
      { kind: 'function_call', functionOid: 1598, argFormats: [1], args: [Buffer.from([0, 0, 0, 1]), null], resultFormat: 1 }],
  ] as const)('%s', (_name, bytes, expected) => {
    expect(roundTrip(bytes)).toEqual(expected);
  });

  it('counts parameters unsigned: 65,535 parameters round-trip', () => {
    const types = Array.from({ length: 65535 }, (_, i) => i);
    expect(decodeParse(buildParse('', 'SELECT 1', types)).paramTypes).toEqual(types);
    const params = Array.from({ length: 40000 }, () => null);
    expect(roundTrip(buildBind({ portal: '', statement: '', paramFormats: [], params, resultFormats: [] })))
      .toMatchObject({ params });
    expect(pgErrorOf(() => buildParse('', 'x', new Array<number>(65536).fill(0))).code).toBe('54000');
  });

  it('decodes byte fields as views into the frame', () => {
    const frame = buildCopyData(Buffer.from('row'));
    const message = decodeFrontend(0x64, frame);
    if (message.kind !== 'copy_data') expect.fail(message.kind);
    expect(message.data.buffer).toBe(frame.buffer);
  });
});

describe('frontend messages: malformed', () => {
  function violation(fn: () => unknown): string {
    const err = pgErrorOf(fn);
    expect(err.code).toBe(SqlState.ProtocolViolation);
    return err.message;
  }

  it('a NUL-less string', () => {
    expect(violation(() => decodeQuery(rawTyped('Q', 'SELECT 1')))).toBe(
      'malformed Query message: string is not NUL-terminated',
    );
    expect(violation(() => decodeParse(rawTyped('P', 's1\0SELECT 1')))).toBe(
      'malformed Parse message: string is not NUL-terminated',
    );
  });

  it('a second statement smuggled behind the first NUL', () => {
    expect(violation(() => decodeQuery(rawTyped('Q', 'SELECT 1\0DROP TABLE t\0')))).toBe(
      'malformed Query message: 13 unexpected trailing bytes',
    );
  });

  it('truncated fields', () => {
    expect(violation(() => decodeParse(rawTyped('P', 's\0q\0\0\x02\0\0\0\x17')))).toBe(
      'malformed Parse message: message is truncated',
    );
    expect(violation(() => decodeFrontend(0x45, rawTyped('E', 'p\0\0\0')))).toBe(
      'malformed Execute message: message is truncated',
    );
  });

  it('a negative value length other than -1 in Bind', () => {
    const body = Buffer.from('\0s\0\0\0\0\x01\xff\xff\xff\xfe\0\0', 'latin1');
    expect(violation(() => decodeFrontend(0x42, rawTyped('B', body)))).toBe(
      'malformed Bind message: invalid value length -2',
    );
  });

  it('a Describe or Close target other than S or P', () => {
    expect(violation(() => decodeFrontend(0x44, rawTyped('D', 'Xname\0')))).toBe(
      "malformed Describe message: invalid target 88, expected 'S' or 'P'",
    );
    expect(violation(() => decodeFrontend(0x43, rawTyped('C', '\0')))).toMatch(/^malformed Close message/);
  });

  it('a body on a message that has none', () => {
    expect(violation(() => decodeFrontend(0x53, rawTyped('S', 'x')))).toBe(
      'malformed Sync message: 1 unexpected trailing bytes',
    );
  });

  it('a length field that disagrees with the frame, or the wrong type byte', () => {
    const frame = buildQuery('SELECT 1');
    frame.writeInt32BE(100, 1);
    expect(violation(() => decodeQuery(frame))).toBe(
      'malformed Query message: length field does not match the frame',
    );
    expect(violation(() => decodeQuery(buildSync()))).toBe(
      "malformed Query message: expected type 0x51 ('Q')",
    );
  });

  it('an unknown type code', () => {
    expect(violation(() => decodeFrontend(0x5a, rawTyped('Z', 'I')))).toBe(
      "invalid frontend message type 0x5a ('Z')",
    );
  });

  it('a password message nobody asked for', () => {
    expect(violation(() => decodeFrontend(0x70, buildPasswordMessage('x')))).toBe(
      'unexpected password message: no authentication was requested',
    );
  });

  it('startup packets of the wrong size or layout', () => {
    expect(violation(() => decodeStartup(rawStartup(80877103, Buffer.alloc(4))))).toBe(
      'invalid length of SSLRequest: 12, expected 8',
    );
    expect(violation(() => decodeStartup(rawStartup(80877102, Buffer.alloc(4))))).toBe(
      'invalid length of CancelRequest: 12, expected 16',
    );
    expect(violation(() => decodeStartup(rawStartup(196608, Buffer.from('user\0bob\0'))))).toBe(
      'invalid startup packet layout: expected terminator as last byte',
    );
    expect(violation(() => decodeStartup(rawStartup(196608, Buffer.from('user\0bob'))))).toBe(
      'malformed StartupMessage message: string is not NUL-terminated',
    );
    expect(violation(() => decodeStartup(rawStartup(196608, Buffer.from('\0\0'))))).toBe(
      'malformed StartupMessage message: 1 unexpected trailing bytes',
    );
    expect(violation(() => decodeStartup(rawStartup(2 << 16)))).toBe(
      'unsupported frontend protocol 2.0: server supports 3.0',
    );
  });

  it('SQL that is not UTF-8 is refused with 22021, not patched with U+FFFD', () => {
    const err = pgErrorOf(() => decodeQuery(rawTyped('Q', Buffer.from('SELECT \xff\0', 'latin1'))));
    expect(err.code).toBe(SqlState.CharacterNotInRepertoire);
    expect(err.message).toBe('invalid byte sequence for encoding "UTF8" in Query message');
    // Overlong, a surrogate, past U+10FFFF, a lone continuation, cut short: each refused, also beside a real U+FFFD.
    for (const bad of ['c0af', 'e0808f', 'eda080', 'f4908080', '80', 'e282', 'efbfbd' + 'c0af']) {
      const sql = Buffer.concat([Buffer.from("SELECT '"), Buffer.from(bad, 'hex'), Buffer.from("'\0")]);
      expect(pgErrorOf(() => decodeQuery(rawTyped('Q', sql))).code, bad).toBe(SqlState.CharacterNotInRepertoire);
    }
    expect(decodeQuery(rawTyped('Q', Buffer.from("SELECT '\uFFFD'\0")))).toBe("SELECT '\uFFFD'"); // valid text holding U+FFFD itself
  });

  it('builders refuse a NUL inside a string instead of shifting every later field', () => {
    const err = pgErrorOf(() => buildQuery('SELECT 1\0; DROP TABLE t'));
    expect(err.code).toBe(SqlState.CharacterNotInRepertoire);
    expect(err.message).toBe('SQL text must not contain a NUL character');
    expect(pgErrorOf(() => buildStartupMessage({ '': 'x' })).code).toBe('22023');
  });
});
