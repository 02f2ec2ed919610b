import { FrontendCode, type PortalTarget } from './codes.js';
import { Cursor } from './cursor.js';
import { decodeStartup } from './decode-startup.js';
import type {
  BindMessage,
  FrontendMessage,
  FunctionCallMessage,
  ParseMessage,
  PasswordPhase,
} from './frontend-messages.js';
import { describeCode, protocolViolation } from './protocol-error.js';

/**
 * Decodes any client frame from the frame reader. The relay mostly looks at the code alone and
 * calls the one decoder it needs (`decodeQuery`, `decodeParse`); this is for the rest.
 * Throws `PgError` 08P01 for a malformed frame and 22021 for SQL text that is not UTF-8.
 *
 * @param phase what a `p` message answers; see `PasswordPhase`.
 */
export function decodeFrontend(
  code: number,
  frame: Buffer,
  phase: PasswordPhase = 'none',
): FrontendMessage {
  switch (code) {
    case FrontendCode.Startup:
      return decodeStartup(frame);
    case FrontendCode.Password:
      return decodePassword(frame, phase);
    case FrontendCode.Query:
      return { kind: 'query', sql: decodeQuery(frame) };
    case FrontendCode.Parse:
      return decodeParse(frame);
    case FrontendCode.Bind:
      return decodeBind(frame);
    case FrontendCode.Describe:
      return { kind: 'describe', ...decodeTarget(frame, FrontendCode.Describe, 'Describe') };
    case FrontendCode.Execute:
      return decodeExecute(frame);
    case FrontendCode.Close:
      return { kind: 'close', ...decodeTarget(frame, FrontendCode.Close, 'Close') };
    case FrontendCode.Sync:
      return empty(frame, code, 'Sync', { kind: 'sync' });
    case FrontendCode.Flush:
      return empty(frame, code, 'Flush', { kind: 'flush' });
    case FrontendCode.Terminate:
      return empty(frame, code, 'Terminate', { kind: 'terminate' });
    case FrontendCode.CopyData:
      return { kind: 'copy_data', data: Cursor.typed(frame, code, 'CopyData').rest() };
    case FrontendCode.CopyDone:
      return empty(frame, code, 'CopyDone', { kind: 'copy_done' });
    case FrontendCode.CopyFail:
      return { kind: 'copy_fail', message: decodeCopyFail(frame) };
    case FrontendCode.FunctionCall:
      return decodeFunctionCall(frame);
    default:
      throw protocolViolation(`invalid frontend message type ${describeCode(code)}`);
  }
}

/**
 * The SQL text of a Query message. The relay's hot path: one bounds-checked scan, no object.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-QUERY
 */
export function decodeQuery(frame: Buffer): string {
  const cursor = Cursor.typed(frame, FrontendCode.Query, 'Query');
  const sql = cursor.cstring();
  cursor.end();
  return sql;
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-PARSE */
export function decodeParse(frame: Buffer): ParseMessage {
  const cursor = Cursor.typed(frame, FrontendCode.Parse, 'Parse');
  const name = cursor.cstring();
  const sql = cursor.cstring();
  const count = cursor.count();
  const paramTypes = new Array<number>(count);
  for (let i = 0; i < count; i++) paramTypes[i] = cursor.uint32();
  cursor.end();
  return { kind: 'parse', name, sql, paramTypes };
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-BIND */
export function decodeBind(frame: Buffer): BindMessage {
  const cursor = Cursor.typed(frame, FrontendCode.Bind, 'Bind');
  const portal = cursor.cstring();
  const statement = cursor.cstring();
  const paramFormats = int16List(cursor);
  const count = cursor.count();
  const params = new Array<Buffer | null>(count);
  for (let i = 0; i < count; i++) params[i] = cursor.nullableBytes();
  const resultFormats = int16List(cursor);
  cursor.end();
  return { kind: 'bind', portal, statement, paramFormats, params, resultFormats };
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-EXECUTE */
export function decodeExecute(frame: Buffer): { kind: 'execute'; portal: string; maxRows: number } {
  const cursor = Cursor.typed(frame, FrontendCode.Execute, 'Execute');
  const portal = cursor.cstring();
  const maxRows = cursor.int32();
  cursor.end();
  return { kind: 'execute', portal, maxRows };
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-COPYFAIL */
export function decodeCopyFail(frame: Buffer): string {
  const cursor = Cursor.typed(frame, FrontendCode.CopyFail, 'CopyFail');
  const message = cursor.cstring();
  cursor.end();
  return message;
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-FUNCTIONCALL */
export function decodeFunctionCall(frame: Buffer): FunctionCallMessage {
  const cursor = Cursor.typed(frame, FrontendCode.FunctionCall, 'FunctionCall');
  const functionOid = cursor.uint32();
  const argFormats = int16List(cursor);
  const count = cursor.count();
  const args = new Array<Buffer | null>(count);
  for (let i = 0; i < count; i++) args[i] = cursor.nullableBytes();
  const resultFormat = cursor.int16();
  cursor.end();
  return { kind: 'function_call', functionOid, argFormats, args, resultFormat };
}

/**
 * A `p` message, read as what the server asked for: PasswordMessage after
 * AuthenticationCleartextPassword, SASLInitialResponse after AuthenticationSASL, SASLResponse
 * after AuthenticationSASLContinue.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-PASSWORDMESSAGE
 */
export function decodePassword(
  frame: Buffer,
  phase: PasswordPhase,
): Extract<FrontendMessage, { kind: 'password' | 'sasl_initial_response' | 'sasl_response' }> {
  switch (phase) {
    case 'password': {
      const cursor = Cursor.typed(frame, FrontendCode.Password, 'PasswordMessage');
      const password = cursor.cstring();
      cursor.end();
      return { kind: 'password', password };
    }
    case 'sasl_initial': {
      const cursor = Cursor.typed(frame, FrontendCode.Password, 'SASLInitialResponse');
      const mechanism = cursor.cstring();
      const data = cursor.nullableBytes();
      cursor.end();
      return { kind: 'sasl_initial_response', mechanism, data };
    }
    case 'sasl':
      return {
        kind: 'sasl_response',
        data: Cursor.typed(frame, FrontendCode.Password, 'SASLResponse').rest(),
      };
    case 'none':
      throw protocolViolation('unexpected password message: no authentication was requested');
    default:
      return assertNever(phase);
  }
}

function decodeTarget(
  frame: Buffer,
  code: number,
  what: string,
): { target: PortalTarget; name: string } {
  const cursor = Cursor.typed(frame, code, what);
  const target = cursor.byte();
  if (target !== 0x53 && target !== 0x50) {
    throw cursor.malformed(`invalid target ${target}, expected 'S' or 'P'`);
  }
  const name = cursor.cstring();
  cursor.end();
  return { target: target === 0x53 ? 'S' : 'P', name };
}

function int16List(cursor: Cursor): number[] {
  const count = cursor.count();
  const list = new Array<number>(count);
  for (let i = 0; i < count; i++) list[i] = cursor.int16();
  return list;
}

function empty<M extends FrontendMessage>(frame: Buffer, code: number, what: string, message: M): M {
  Cursor.typed(frame, code, what).end();
  return message;
}

function assertNever(value: never): never {
  throw protocolViolation(`unexpected value ${String(value)}`);
}
