import { describe, expect, it } from 'vitest';
import { PgError, SqlState } from '../../../src/shared/errors.js';
import {
  BackendCode,
  buildAuthenticationCleartextPassword,
  buildAuthenticationOk,
  buildAuthenticationSasl,
  buildAuthenticationSaslContinue,
  buildAuthenticationSaslFinal,
  buildBackendKeyData,
  buildCommandComplete,
  buildEmptyQueryResponse,
  buildErrorResponse,
  buildNegotiateProtocolVersion,
  buildNoticeResponse,
  buildParameterStatus,
  buildReadyForQuery,
  decodeAuthentication,
  decodeBackendKeyData,
  decodeCommandComplete,
  decodeErrorResponse,
  decodeNegotiateProtocolVersion,
  decodeNoticeResponse,
  decodeParameterStatus,
  decodeReadyForQuery,
  FrameReader,
  SSL_NO,
  SSL_YES,
} from '../../../src/protocol/index.js';
import { pgErrorOf, rawTyped } from './helpers.js';

/** Frames `bytes` as a server stream; returns the one frame and its code. */
function frameOf(bytes: Buffer): { code: number; frame: Buffer } {
  const reader = new FrameReader({ source: 'backend' });
  const frames: { code: number; frame: Buffer }[] = [];
  reader.push(bytes, (code, frame) => frames.push({ code, frame }));
  expect(frames).toHaveLength(1);
  return frames[0] ?? expect.fail('no frame');
}

/** Every observable field of a PgError, for deep comparison. */
function fieldsOf(err: PgError): Record<string, unknown> {
  const { code, message, severity, detail, hint, position, extra } = err;
  return { code, message, severity, detail, hint, position, extra };
}

const everyField = new PgError(SqlState.UniqueViolation, 'duplicate key value violates unique constraint "orders_pkey"', {
  severity: 'ERROR',
  detail: 'Key (id)=(1) already exists.',
  hint: 'Pick another id.',
  position: 42,
  extra: {
    severityLocalized: 'ERREUR',
    schema: 'alice/sales',
    table: 'Orders 2024',
    column: 'id',
    dataType: 'integer',
    constraint: 'orders_pkey',
    where: 'PL/pgSQL function f() line 3',
    internalPosition: '7',
    internalQuery: 'SELECT 1',
    file: 'nbtinsert.c',
    line: '666',
    routine: '_bt_check_unique',
    Z: 'a field letter Postgres may add later',
  },
});

describe('backend messages: build, frame, decode', () => {
  it.each([
    ['AuthenticationOk', buildAuthenticationOk(), { kind: 'ok' }],
    ['AuthenticationCleartextPassword', buildAuthenticationCleartextPassword(), { kind: 'cleartext_password' }],
    ['AuthenticationSASL', buildAuthenticationSasl(['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256']),
      { kind: 'sasl', mechanisms: ['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256'] }],
    ['AuthenticationSASLContinue', buildAuthenticationSaslContinue(Buffer.from('r=abc,s=c2FsdA==,i=4096')),
      { kind: 'sasl_continue', data: Buffer.from('r=abc,s=c2FsdA==,i=4096') }],
    ['AuthenticationSASLFinal', buildAuthenticationSaslFinal(Buffer.from('v=c2lnbmF0dXJl')),
      { kind: 'sasl_final', data: Buffer.from('v=c2lnbmF0dXJl') }],
  ] as const)('%s', (_name, bytes, expected) => {
    const { code, frame } = frameOf(bytes);
    expect(code).toBe(BackendCode.Authentication);
    expect(decodeAuthentication(frame)).toEqual(expected);
  });

  it('Authentication requests the proxy does not speak, and MD5', () => {
    expect(decodeAuthentication(rawTyped('R', Buffer.from([0, 0, 0, 7])))).toEqual({ kind: 'unsupported', code: 7 });
    expect(decodeAuthentication(rawTyped('R', Buffer.from([0, 0, 0, 5, 1, 2, 3, 4])))).toEqual({
      kind: 'md5_password',
      salt: Buffer.from([1, 2, 3, 4]),
    });
  });

  it('ParameterStatus, BackendKeyData, ReadyForQuery, CommandComplete, EmptyQueryResponse', () => {
    expect(decodeParameterStatus(frameOf(buildParameterStatus('search_path', '"alice/sales"')).frame))
      .toEqual({ name: 'search_path', value: '"alice/sales"' });
    expect(decodeBackendKeyData(frameOf(buildBackendKeyData(31337, -5)).frame))
      .toEqual({ processId: 31337, secretKey: -5 });
    for (const status of ['I', 'T', 'E'] as const) {
      expect(decodeReadyForQuery(frameOf(buildReadyForQuery(status)).frame)).toBe(status);
    }
    expect(decodeCommandComplete(frameOf(buildCommandComplete('INSERT 0 3')).frame)).toBe('INSERT 0 3');
    expect(buildEmptyQueryResponse()).toEqual(Buffer.from([0x49, 0, 0, 0, 4]));
    expect([SSL_YES, SSL_NO].map(String)).toEqual(['S', 'N']);
  });

  it('NegotiateProtocolVersion', () => {
    const frame = frameOf(buildNegotiateProtocolVersion(196608, ['_pq_.compression'])).frame;
    expect(decodeNegotiateProtocolVersion(frame)).toEqual({ protocol: 196608, unsupportedOptions: ['_pq_.compression'] });
  });

  it('ErrorResponse with every field round-trips to an identical PgError and identical bytes', () => {
    const bytes = buildErrorResponse(everyField);
    const decoded = decodeErrorResponse(frameOf(bytes).frame);
    expect(decoded).toBeInstanceOf(PgError);
    expect(fieldsOf(decoded)).toEqual(fieldsOf(everyField));
    expect(buildErrorResponse(decoded)).toEqual(bytes);
  });

  it('ErrorResponse writes the fields Postgres defines under their letters', () => {
    const body = buildErrorResponse(everyField).subarray(5).toString('utf8');
    const fields = Object.fromEntries(body.split('\0').filter(Boolean).map((f) => [f[0], f.slice(1)]));
    expect(fields).toEqual({
      S: 'ERREUR', V: 'ERROR', C: '23505', M: everyField.message, D: 'Key (id)=(1) already exists.',
      H: 'Pick another id.', P: '42', s: 'alice/sales', t: 'Orders 2024', c: 'id', d: 'integer',
      n: 'orders_pkey', W: 'PL/pgSQL function f() line 3', p: '7', q: 'SELECT 1', F: 'nbtinsert.c',
      L: '666', R: '_bt_check_unique', Z: 'a field letter Postgres may add later',
    });
  });

  it('a severity override replaces both S and V', () => {
    const fatal = decodeErrorResponse(buildErrorResponse(everyField, 'FATAL'));
    expect(fatal.severity).toBe('FATAL');
    expect(fatal.extra?.['severityLocalized']).toBeUndefined();
  });

  it('a minimal error: no optional field is invented', () => {
    const err = decodeErrorResponse(buildErrorResponse(new PgError('42501', 'permission denied for repo "bob/secret"')));
    expect(fieldsOf(err)).toEqual({
      code: '42501', message: 'permission denied for repo "bob/secret"', severity: 'ERROR',
      detail: undefined, hint: undefined, position: undefined, extra: undefined,
    });
  });

  it('NoticeResponse keeps severities PgError has no name for', () => {
    const info = new PgError('00000', 'hello', { severity: 'NOTICE', extra: { severity: 'INFO' } });
    const bytes = buildNoticeResponse(info);
    expect(bytes.subarray(5).toString('latin1')).toBe('SINFO\0VINFO\0C00000\0Mhello\0\0');
    const decoded = decodeNoticeResponse(frameOf(bytes).frame);
    expect(fieldsOf(decoded)).toEqual(fieldsOf(info));
  });

  it('a position that is not a number is kept as text', () => {
    const decoded = decodeErrorResponse(rawTyped('E', 'VERROR\0C42601\0Mx\0Pabc\0\0'));
    expect(decoded.position).toBeUndefined();
    expect(decoded.extra).toEqual({ position: 'abc' });
    expect(buildErrorResponse(decoded).subarray(5).toString('latin1')).toBe('SERROR\0VERROR\0C42601\0Mx\0Pabc\0\0');
  });

  it('an error from a pre-9.6 server (no V field) takes its severity from S', () => {
    expect(decodeErrorResponse(rawTyped('E', 'SFATAL\0C28P01\0Mno\0\0')).severity).toBe('FATAL');
  });

  it('does not send extra keys that name no field, even ones Object.prototype has', () => {
    const err = new PgError('XX000', 'x', { extra: { constructor: 'c', toString: 't', tableName: 'n' } });
    expect(buildErrorResponse(err).subarray(5).toString('latin1')).toBe('SERROR\0VERROR\0CXX000\0Mx\0\0');
  });

  it('strips NULs from error text rather than failing to report the error', () => {
    const bytes = buildErrorResponse(new PgError('42601', 'syntax error at "a\0b"'));
    expect(decodeErrorResponse(bytes).message).toBe('syntax error at "ab"');
  });
});

describe('backend messages: malformed', () => {
  it.each([
    ['an unknown authentication code', () => decodeAuthentication(rawTyped('R', Buffer.from([0, 0, 0, 99]))),
      'malformed Authentication message: unknown authentication request 99'],
    ['a SASL mechanism list without terminator', () => decodeAuthentication(rawTyped('R', Buffer.from('\0\0\0\x0aSCRAM-SHA-256\0', 'latin1'))),
      'malformed Authentication message: string is not NUL-terminated'],
    ['a ReadyForQuery status other than I/T/E', () => decodeReadyForQuery(rawTyped('Z', 'X')),
      'malformed ReadyForQuery message: invalid transaction status 88'],
    ['an error without its final zero byte', () => decodeErrorResponse(rawTyped('E', 'SERROR\0')),
      'malformed ErrorResponse message: message is truncated'],
    ['a long (protocol 3.2) cancel key', () => decodeBackendKeyData(rawTyped('K', Buffer.alloc(40))),
      'malformed BackendKeyData message: 32 unexpected trailing bytes'],
  ])('%s', (_name, fn, message) => {
    const err = pgErrorOf(fn);
    expect(err.code).toBe(SqlState.ProtocolViolation);
    expect(err.message).toBe(message);
  });
});
