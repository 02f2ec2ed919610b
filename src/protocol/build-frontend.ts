import { FrontendCode, type PortalTarget } from './codes.js';
import type { BindMessage, FunctionCallMessage } from './frontend-messages.js';
import { cstringSize, Writer } from './writer.js';

/**
 * Client messages after startup: simple and extended query, COPY, function call. The proxy
 * relays clients' own frames as they came; these are for when it is the client (health checks,
 * session setup on a pooled connection) and for tests.
 */

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-QUERY */
export function buildQuery(sql: string): Buffer {
  return Writer.typed(FrontendCode.Query, cstringSize(sql, 'SQL text')).cstring(sql).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-PARSE */
export function buildParse(name: string, sql: string, paramTypes: readonly number[] = []): Buffer {
  const size =
    cstringSize(name, 'statement name') + cstringSize(sql, 'SQL text') + 2 + 4 * paramTypes.length;
  const writer = Writer.typed(FrontendCode.Parse, size).cstring(name).cstring(sql);
  writer.int16(paramTypes.length);
  for (const oid of paramTypes) writer.int32(oid);
  return writer.done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-BIND */
export function buildBind(bind: Omit<BindMessage, 'kind'>): Buffer {
  const size =
    cstringSize(bind.portal, 'portal name') +
    cstringSize(bind.statement, 'statement name') +
    int16ListSize(bind.paramFormats) +
    valuesSize(bind.params) +
    int16ListSize(bind.resultFormats);
  const writer = Writer.typed(FrontendCode.Bind, size).cstring(bind.portal).cstring(bind.statement);
  writeInt16List(writer, bind.paramFormats);
  writeValues(writer, bind.params);
  writeInt16List(writer, bind.resultFormats);
  return writer.done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-DESCRIBE */
export function buildDescribe(target: PortalTarget, name: string): Buffer {
  return Writer.typed(FrontendCode.Describe, 1 + cstringSize(name, 'describe target'))
    .byte(target.charCodeAt(0))
    .cstring(name)
    .done();
}

/**
 * @param maxRows 0 for no limit
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-EXECUTE
 */
export function buildExecute(portal: string, maxRows = 0): Buffer {
  return Writer.typed(FrontendCode.Execute, cstringSize(portal, 'portal name') + 4)
    .cstring(portal)
    .int32(maxRows)
    .done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-CLOSE */
export function buildClose(target: PortalTarget, name: string): Buffer {
  return Writer.typed(FrontendCode.Close, 1 + cstringSize(name, 'close target'))
    .byte(target.charCodeAt(0))
    .cstring(name)
    .done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-SYNC */
export function buildSync(): Buffer {
  return Writer.typed(FrontendCode.Sync, 0).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-FLUSH */
export function buildFlush(): Buffer {
  return Writer.typed(FrontendCode.Flush, 0).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-TERMINATE */
export function buildTerminate(): Buffer {
  return Writer.typed(FrontendCode.Terminate, 0).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-COPYDATA */
export function buildCopyData(data: Uint8Array): Buffer {
  return Writer.typed(FrontendCode.CopyData, data.length).bytes(data).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-COPYDONE */
export function buildCopyDone(): Buffer {
  return Writer.typed(FrontendCode.CopyDone, 0).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-COPYFAIL */
export function buildCopyFail(message: string): Buffer {
  return Writer.typed(FrontendCode.CopyFail, cstringSize(message, 'CopyFail message'))
    .cstring(message)
    .done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-FUNCTIONCALL */
export function buildFunctionCall(call: Omit<FunctionCallMessage, 'kind'>): Buffer {
  const size = 4 + int16ListSize(call.argFormats) + valuesSize(call.args) + 2;
  const writer = Writer.typed(FrontendCode.FunctionCall, size).int32(call.functionOid);
  writeInt16List(writer, call.argFormats);
  writeValues(writer, call.args);
  return writer.int16(call.resultFormat).done();
}

function int16ListSize(list: readonly number[]): number {
  return 2 + 2 * list.length;
}

function writeInt16List(writer: Writer, list: readonly number[]): void {
  writer.int16(list.length);
  for (const value of list) writer.int16(value);
}

/** Int16 count, then per value an Int32 length (-1 for NULL) and the bytes. */
function valuesSize(values: readonly (Uint8Array | null)[]): number {
  let size = 2;
  for (const value of values) size += 4 + (value?.length ?? 0);
  return size;
}

function writeValues(writer: Writer, values: readonly (Uint8Array | null)[]): void {
  writer.int16(values.length);
  for (const value of values) {
    if (value === null) writer.int32(-1);
    else writer.int32(value.length).bytes(value);
  }
}
