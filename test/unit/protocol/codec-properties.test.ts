/**
 * Property tests of the codec: every builder's output decodes back to what was built; a stream
 * of frames cut anywhere still frames exactly; and arbitrary bytes never make the reader or a
 * decoder throw anything but a PgError (08P01, or 22021 for text that is not UTF-8).
 * Seeds are fixed so a failure reproduces; `numRuns` keeps the file to a few seconds.
 */
import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BackendCode,
  buildAuthenticationCleartextPassword,
  buildAuthenticationOk,
  buildAuthenticationSasl,
  buildAuthenticationSaslContinue,
  buildAuthenticationSaslFinal,
  buildBackendKeyData,
  buildBind,
  buildCancelRequest,
  buildClose,
  buildCommandComplete,
  buildCopyData,
  buildCopyDone,
  buildCopyFail,
  buildDescribe,
  buildErrorResponse,
  buildExecute,
  buildFlush,
  buildFunctionCall,
  buildGssEncRequest,
  buildNegotiateProtocolVersion,
  buildNoticeResponse,
  buildParameterStatus,
  buildParse,
  buildPasswordMessage,
  buildQuery,
  buildReadyForQuery,
  buildSaslInitialResponse,
  buildSaslResponse,
  buildSslRequest,
  buildStartupMessage,
  buildSync,
  buildTerminate,
  decodeAuthentication,
  decodeBackendKeyData,
  decodeCommandComplete,
  decodeDataRow,
  decodeErrorResponse,
  decodeFrontend,
  decodeNegotiateProtocolVersion,
  decodeNoticeResponse,
  decodeParameterStatus,
  decodeReadyForQuery,
  decodeRowDescription,
  decodeStartup,
  decodeQuery,
  FrameReader,
  FrontendCode,
  type FrontendMessage,
  type PasswordPhase,
} from '../../../src/protocol/index.js';
import { isPgError, PgError, SqlState } from '../../../src/shared/errors.js';

const SEED = 0x5eed;
const runs = (numRuns: number) => ({ seed: SEED, numRuns });

/** Text the protocol can carry: any Unicode but NUL. */
const text = (maxLength = 40) =>
  fc.string({ unit: 'grapheme', maxLength }).map((s) => s.replaceAll('\0', ''));
const bytes = (maxLength = 64) => fc.uint8Array({ maxLength }).map((a) => Buffer.from(a));
const int16 = fc.integer({ min: -0x8000, max: 0x7fff });
const int32 = fc.integer({ min: -0x8000_0000, max: 0x7fff_ffff });
const uint32 = fc.integer({ min: 0, max: 0xffff_ffff });
const target = fc.constantFrom('S' as const, 'P' as const);
const nullableBytes = fc.option(bytes(), { nil: null });

/** Decodes one frame as the connection layer would, the frame reader's code first. */
function decodeOne(frame: Buffer, phase: PasswordPhase = 'none'): FrontendMessage {
  let out: FrontendMessage | undefined;
  const startup = frame[0] === 0 || frame.readInt32BE(0) === frame.length;
  const reader = new FrameReader({ source: 'frontend', startup: startup && frame[0] === 0 });
  reader.push(frame, (code, f) => {
    expect(out).toBeUndefined();
    out = decodeFrontend(code, f, phase);
  });
  if (out === undefined) throw new Error('no frame came out');
  return out;
}

describe('frontend round trips: decode(build(x)) = x', () => {
  it('Query, Parse, Describe, Execute, Close, CopyFail', () => {
    fc.assert(fc.property(text(200), (sql) => void expect(decodeOne(buildQuery(sql))).toEqual({ kind: 'query', sql })), runs(300));
    fc.assert(
      fc.property(text(), text(200), fc.array(uint32, { maxLength: 20 }), (name, sql, paramTypes) => void expect(decodeOne(buildParse(name, sql, paramTypes))).toEqual({ kind: 'parse', name, sql, paramTypes }),
      ),
      runs(300),
    );
    fc.assert(
      fc.property(target, text(), (t, name) => {
        expect(decodeOne(buildDescribe(t, name))).toEqual({ kind: 'describe', target: t, name });
        expect(decodeOne(buildClose(t, name))).toEqual({ kind: 'close', target: t, name });
      }),
      runs(200),
    );
    fc.assert(
      fc.property(text(), int32, (portal, maxRows) => void expect(decodeOne(buildExecute(portal, maxRows))).toEqual({ kind: 'execute', portal, maxRows }),
      ),
      runs(200),
    );
    fc.assert(fc.property(text(), (message) => void expect(decodeOne(buildCopyFail(message))).toEqual({ kind: 'copy_fail', message })), runs(200));
  });

  it('Bind and FunctionCall, NULLs kept apart from empty values', () => {
    fc.assert(
      fc.property(
        text(),
        text(),
        fc.array(int16, { maxLength: 8 }),
        fc.array(nullableBytes, { maxLength: 8 }),
        fc.array(int16, { maxLength: 8 }),
        (portal, statement, paramFormats, params, resultFormats) => {
          const bind = { portal, statement, paramFormats, params, resultFormats };
          expect(decodeOne(buildBind(bind))).toEqual({ kind: 'bind', ...bind });
        },
      ),
      runs(300),
    );
    fc.assert(
      fc.property(uint32, fc.array(int16, { maxLength: 8 }), fc.array(nullableBytes, { maxLength: 8 }), int16, (functionOid, argFormats, args, resultFormat) => {
        const call = { functionOid, argFormats, args, resultFormat };
        expect(decodeOne(buildFunctionCall(call))).toEqual({ kind: 'function_call', ...call });
      }),
      runs(200),
    );
  });

  it('CopyData and the empty messages', () => {
    fc.assert(fc.property(bytes(300), (data) => void expect(decodeOne(buildCopyData(data))).toEqual({ kind: 'copy_data', data })), runs(200));
    expect(decodeOne(buildCopyDone())).toEqual({ kind: 'copy_done' });
    expect(decodeOne(buildSync())).toEqual({ kind: 'sync' });
    expect(decodeOne(buildFlush())).toEqual({ kind: 'flush' });
    expect(decodeOne(buildTerminate())).toEqual({ kind: 'terminate' });
  });

  it('startup phase: StartupMessage, CancelRequest, SSLRequest, GSSENCRequest', () => {
    const name = text(20).filter((s) => s !== '');
    fc.assert(
      fc.property(fc.dictionary(name, text(), { maxKeys: 8 }), fc.integer({ min: 0, max: 0xffff }), (params, minor) => {
        const decoded = decodeStartup(buildStartupMessage(params, 0x0003_0000 + minor));
        expect(decoded).toEqual({ kind: 'startup', protocol: 0x0003_0000 + minor, params: expect.any(Object) as unknown });
        expect({ ...(decoded as { params: Record<string, string> }).params }).toEqual({ ...params });
      }),
      runs(300),
    );
    fc.assert(
      fc.property(int32, int32, (processId, secretKey) => void expect(decodeStartup(buildCancelRequest(processId, secretKey))).toEqual({ kind: 'cancel_request', processId, secretKey }),
      ),
      runs(100),
    );
    expect(decodeStartup(buildSslRequest())).toEqual({ kind: 'ssl_request' });
    expect(decodeStartup(buildGssEncRequest())).toEqual({ kind: 'gssenc_request' });
  });

  it('password messages, read in the phase the server asked for', () => {
    fc.assert(fc.property(text(), (password) => void expect(decodeOne(buildPasswordMessage(password), 'password')).toEqual({ kind: 'password', password })), runs(100));
    fc.assert(
      fc.property(text(20), fc.option(bytes(), { nil: null }), (mechanism, data) => void expect(decodeOne(buildSaslInitialResponse(mechanism, data), 'sasl_initial')).toEqual({ kind: 'sasl_initial_response', mechanism, data }),
      ),
      runs(100),
    );
    fc.assert(fc.property(bytes(), (data) => void expect(decodeOne(buildSaslResponse(data), 'sasl')).toEqual({ kind: 'sasl_response', data })), runs(100));
  });
});

describe('backend round trips: decode(build(x)) = x', () => {
  it('Authentication requests', () => {
    expect(decodeAuthentication(buildAuthenticationOk())).toEqual({ kind: 'ok' });
    expect(decodeAuthentication(buildAuthenticationCleartextPassword())).toEqual({ kind: 'cleartext_password' });
    fc.assert(
      fc.property(fc.array(text(20).filter((s) => s !== ''), { maxLength: 5 }), (mechanisms) => void expect(decodeAuthentication(buildAuthenticationSasl(mechanisms))).toEqual({ kind: 'sasl', mechanisms }),
      ),
      runs(100),
    );
    fc.assert(
      fc.property(bytes(), (data) => {
        expect(decodeAuthentication(buildAuthenticationSaslContinue(data))).toEqual({ kind: 'sasl_continue', data });
        expect(decodeAuthentication(buildAuthenticationSaslFinal(data))).toEqual({ kind: 'sasl_final', data });
      }),
      runs(100),
    );
  });

  it('ParameterStatus, BackendKeyData, ReadyForQuery, CommandComplete, NegotiateProtocolVersion', () => {
    fc.assert(fc.property(text(), text(), (name, value) => void expect(decodeParameterStatus(buildParameterStatus(name, value))).toEqual({ name, value })), runs(200));
    fc.assert(fc.property(int32, int32, (processId, secretKey) => void expect(decodeBackendKeyData(buildBackendKeyData(processId, secretKey))).toEqual({ processId, secretKey })), runs(100));
    for (const status of ['I', 'T', 'E'] as const) expect(decodeReadyForQuery(buildReadyForQuery(status))).toBe(status);
    fc.assert(fc.property(text(), (tag) => void expect(decodeCommandComplete(buildCommandComplete(tag))).toBe(tag)), runs(100));
    fc.assert(
      fc.property(int32, fc.array(text(), { maxLength: 5 }), (protocol, unsupportedOptions) => void expect(decodeNegotiateProtocolVersion(buildNegotiateProtocolVersion(protocol, unsupportedOptions))).toEqual({ protocol, unsupportedOptions }),
      ),
      runs(100),
    );
  });

  it('ErrorResponse and NoticeResponse keep code, message, detail, hint, position and severity', () => {
    const code = fc.stringMatching(/^[0-9A-Z]{5}$/);
    const severity = fc.constantFrom('ERROR' as const, 'FATAL' as const, 'PANIC' as const, 'WARNING' as const, 'NOTICE' as const);
    const optional = fc.option(text(), { nil: undefined });
    fc.assert(
      fc.property(code, text(100), optional, optional, fc.option(fc.integer({ min: 1, max: 999_999_999 }), { nil: undefined }), severity, (c, message, detail, hint, position, sev) => {
        const err = new PgError(c, message, { detail, hint, position, severity: sev });
        for (const decoded of [decodeErrorResponse(buildErrorResponse(err)), decodeNoticeResponse(buildNoticeResponse(err))]) {
          expect(decoded).toBeInstanceOf(PgError);
          expect({ code: decoded.code, message: decoded.message, detail: decoded.detail, hint: decoded.hint, position: decoded.position, severity: decoded.severity })
            .toEqual({ code: c, message, detail, hint, position, severity: sev });
        }
      }),
      runs(200),
    );
  });
});

/** A frontend message of any type, as built bytes. */
const frontendFrame = fc.oneof(
  text(100).map(buildQuery),
  fc.tuple(text(), text(100), fc.array(uint32, { maxLength: 4 })).map(([n, s, t]) => buildParse(n, s, t)),
  fc.tuple(text(), fc.array(nullableBytes, { maxLength: 4 })).map(([p, params]) => buildBind({ portal: p, statement: '', paramFormats: [], params, resultFormats: [] })),
  fc.tuple(target, text()).map(([t, n]) => buildDescribe(t, n)),
  fc.tuple(text(), int32).map(([p, m]) => buildExecute(p, m)),
  bytes(200).map(buildCopyData),
  fc.constantFrom(buildSync(), buildFlush(), buildCopyDone()),
);

/** Cuts `stream` at the given offsets (sorted, deduplicated) into pieces, empty ones included. */
function cut(stream: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => o % (stream.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let last = 0;
  for (const p of points) {
    pieces.push(stream.subarray(last, p));
    last = p;
  }
  pieces.push(stream.subarray(last));
  return pieces;
}

function frameAll(pieces: Buffer[], startup: boolean): { code: number; bytes: Buffer }[] {
  const reader = new FrameReader({ source: 'frontend', startup });
  const out: { code: number; bytes: Buffer }[] = [];
  for (const piece of pieces) reader.push(piece, (code, frame) => out.push({ code, bytes: Buffer.from(frame) }));
  expect(reader.bufferedBytes).toBe(0);
  return out;
}

describe('FrameReader: a built stream cut anywhere yields exactly its frames', () => {
  it('typed phase', () => {
    fc.assert(
      fc.property(fc.array(frontendFrame, { minLength: 1, maxLength: 12 }), fc.array(fc.nat(), { maxLength: 30 }), (frames, offsets) => {
        const out = frameAll(cut(Buffer.concat(frames), offsets), false);
        expect(out).toEqual(frames.map((f) => ({ code: f[0], bytes: f })));
      }),
      runs(400),
    );
  });

  it('startup phase, then typed', () => {
    fc.assert(
      fc.property(
        fc.dictionary(text(10).filter((s) => s !== ''), text(20), { maxKeys: 4 }),
        fc.array(frontendFrame, { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (params, frames, offsets) => {
          const startup = buildStartupMessage({ user: 'u', ...params });
          const out = frameAll(cut(Buffer.concat([startup, ...frames]), offsets), true);
          expect(out).toEqual([{ code: FrontendCode.Startup, bytes: startup }, ...frames.map((f) => ({ code: f[0], bytes: f }))]);
        },
      ),
      runs(300),
    );
  });
});

/** Runs `fn`; passes when it returns or throws a PgError of the allowed codes, fails on anything else. */
function onlyPgErrors(fn: () => unknown, allowed: readonly string[] = [SqlState.ProtocolViolation, SqlState.CharacterNotInRepertoire]): void {
  try {
    fn();
  } catch (err: unknown) {
    if (!isPgError(err)) throw err;
    expect(allowed).toContain(err.code);
  }
}

const FRONTEND_CODES = [...Object.values(FrontendCode)];
const PHASES: PasswordPhase[] = ['none', 'password', 'sasl_initial', 'sasl'];

/** Arbitrary bodies behind a valid header, and arbitrary bytes with no header at all. */
const anyFrame = (codes: readonly number[]) =>
  fc.oneof(
    fc.tuple(fc.constantFrom(...codes), bytes(80)).map(([code, body]) => {
      const frame = Buffer.alloc(5 + body.length);
      frame[0] = code;
      frame.writeInt32BE(4 + body.length, 1);
      body.copy(frame, 5);
      return frame;
    }),
    bytes(80),
  );

describe('arbitrary bytes throw only PgErrors', () => {
  it('FrameReader, both phases and both directions, in arbitrary pieces', () => {
    fc.assert(
      fc.property(bytes(300), fc.array(fc.nat(), { maxLength: 10 }), fc.constantFrom('startup', 'typed', 'backend'), (stream, offsets, mode) => {
        const reader = mode === 'backend' ? new FrameReader({ source: 'backend' }) : new FrameReader({ source: 'frontend', startup: mode === 'startup' });
        let frames = 0;
        onlyPgErrors(() => {
          for (const piece of cut(stream, offsets)) reader.push(piece, () => frames++);
        }, [SqlState.ProtocolViolation]);
        expect(frames).toBeGreaterThanOrEqual(0);
      }),
      runs(1000),
    );
  });

  it('decodeFrontend for every code and phase, and decodeStartup', () => {
    fc.assert(
      fc.property(anyFrame(FRONTEND_CODES), fc.constantFrom(...FRONTEND_CODES), fc.constantFrom(...PHASES), (frame, code, phase) => {
        onlyPgErrors(() => decodeFrontend(code, frame, phase));
        onlyPgErrors(() => decodeFrontend(frame[0] ?? 0, frame, phase));
        onlyPgErrors(() => decodeStartup(frame), [SqlState.ProtocolViolation]);
      }),
      runs(2000),
    );
  });

  it('every backend decoder', () => {
    const decoders: ((frame: Buffer) => unknown)[] = [
      decodeAuthentication,
      decodeReadyForQuery,
      decodeParameterStatus,
      decodeBackendKeyData,
      decodeCommandComplete,
      decodeErrorResponse,
      decodeNoticeResponse,
      decodeNegotiateProtocolVersion,
      decodeRowDescription,
      decodeDataRow,
    ];
    fc.assert(
      fc.property(anyFrame(Object.values(BackendCode)), (frame) => {
        for (const decode of decoders) onlyPgErrors(() => decode(frame), [SqlState.ProtocolViolation]);
      }),
      runs(2000),
    );
  });

  it('a malformed frame is refused with 08P01, not decoded', () => {
    // The property above must be able to fail: a truncated Bind is an error, not a message.
    const bind = buildBind({ portal: '', statement: '', paramFormats: [], params: [Buffer.from('x')], resultFormats: [] });
    const truncated = Buffer.from(bind.subarray(0, bind.length - 3));
    truncated.writeInt32BE(truncated.length - 1, 1);
    let caught: unknown;
    try {
      decodeFrontend(FrontendCode.Bind, truncated);
    } catch (err: unknown) {
      caught = err;
    }
    expect(isPgError(caught) && caught.code).toBe(SqlState.ProtocolViolation);
  });

  it("a statement's text is refused with 22021 exactly when its bytes are not UTF-8", () => {
    // Bytes around UTF-8's edges (lead bytes, continuations, overlong and surrogate starts, past U+10FFFF) and any other but NUL.
    const edge = fc.constantFrom(0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbd, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff);
    const sql = fc.array(fc.oneof(edge, fc.integer({ min: 1, max: 255 })), { maxLength: 12 }).map((a) => Buffer.from(a));
    fc.assert(
      fc.property(sql, (body) => {
        const frame = Buffer.alloc(6 + body.length);
        frame[0] = FrontendCode.Query;
        frame.writeInt32BE(5 + body.length, 1);
        body.copy(frame, 5);
        let code: string | undefined;
        try {
          expect(decodeQuery(frame)).toBe(body.toString('utf8'));
        } catch (err: unknown) {
          code = isPgError(err) ? err.code : String(err);
        }
        expect(code).toBe(isUtf8(body) ? undefined : SqlState.CharacterNotInRepertoire);
      }),
      runs(20_000),
    );
  });

  it('DataRow with a negative or missing column count is 08P01, not a RangeError', () => {
    for (const frame of [Buffer.from([0x44, 0, 0, 0, 6, 0xff, 0xff]), Buffer.from([0x44, 0, 0, 0, 4]), Buffer.from([0x44, 0, 0, 0, 6, 0, 1])]) {
      let caught: unknown;
      try {
        decodeDataRow(frame);
      } catch (err: unknown) {
        caught = err;
      }
      expect(isPgError(caught) && caught.code).toBe(SqlState.ProtocolViolation);
    }
  });
});
