import type { PgError, Severity } from '../shared/errors.js';
import { AuthCode, BackendCode, type TransactionStatus } from './codes.js';
import { errorFieldsOf } from './error-fields.js';
import { cstringSize, Writer } from './writer.js';

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-AUTHENTICATIONOK */
export function buildAuthenticationOk(): Buffer {
  return Writer.typed(BackendCode.Authentication, 4).int32(AuthCode.Ok).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-AUTHENTICATIONCLEARTEXTPASSWORD */
export function buildAuthenticationCleartextPassword(): Buffer {
  return Writer.typed(BackendCode.Authentication, 4).int32(AuthCode.CleartextPassword).done();
}

/**
 * The mechanism list ends with an empty name, hence the extra byte.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-AUTHENTICATIONSASL
 */
export function buildAuthenticationSasl(mechanisms: readonly string[]): Buffer {
  let size = 4 + 1;
  for (const name of mechanisms) size += cstringSize(name, 'SASL mechanism');
  const writer = Writer.typed(BackendCode.Authentication, size).int32(AuthCode.SASL);
  for (const name of mechanisms) writer.cstring(name);
  return writer.byte(0).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-AUTHENTICATIONSASLCONTINUE */
export function buildAuthenticationSaslContinue(data: Uint8Array): Buffer {
  return Writer.typed(BackendCode.Authentication, 4 + data.length)
    .int32(AuthCode.SASLContinue)
    .bytes(data)
    .done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-AUTHENTICATIONSASLFINAL */
export function buildAuthenticationSaslFinal(data: Uint8Array): Buffer {
  return Writer.typed(BackendCode.Authentication, 4 + data.length)
    .int32(AuthCode.SASLFinal)
    .bytes(data)
    .done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-PARAMETERSTATUS */
export function buildParameterStatus(name: string, value: string): Buffer {
  const size = cstringSize(name, 'parameter name') + cstringSize(value, 'parameter value');
  return Writer.typed(BackendCode.ParameterStatus, size).cstring(name).cstring(value).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-BACKENDKEYDATA */
export function buildBackendKeyData(processId: number, secretKey: number): Buffer {
  return Writer.typed(BackendCode.BackendKeyData, 8).int32(processId).int32(secretKey).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-READYFORQUERY */
export function buildReadyForQuery(status: TransactionStatus): Buffer {
  return Writer.typed(BackendCode.ReadyForQuery, 1).byte(status.charCodeAt(0)).done();
}

/**
 * Every field of the error: S, V, C, M, D, H, P and each `extra` field (see `error-fields.ts`).
 *
 * @param severity overrides `err.severity`, e.g. FATAL before closing the connection.
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-ERRORRESPONSE
 */
export function buildErrorResponse(err: PgError, severity?: Severity): Buffer {
  return buildFieldMessage(BackendCode.ErrorResponse, errorFieldsOf(err, severity));
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-NOTICERESPONSE */
export function buildNoticeResponse(notice: PgError): Buffer {
  return buildFieldMessage(BackendCode.NoticeResponse, errorFieldsOf(notice));
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-COMMANDCOMPLETE */
export function buildCommandComplete(tag: string): Buffer {
  return Writer.typed(BackendCode.CommandComplete, cstringSize(tag, 'command tag'))
    .cstring(tag)
    .done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-EMPTYQUERYRESPONSE */
export function buildEmptyQueryResponse(): Buffer {
  return Writer.typed(BackendCode.EmptyQueryResponse, 0).done();
}

/**
 * The answer to a StartupMessage asking for a newer minor version or `_pq_.` options.
 *
 * @param protocol newest version supported for the requested major, e.g. 196608 (3.0)
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-NEGOTIATEPROTOCOLVERSION
 */
export function buildNegotiateProtocolVersion(
  protocol: number,
  unsupportedOptions: readonly string[],
): Buffer {
  let size = 8;
  for (const option of unsupportedOptions) size += cstringSize(option, 'protocol option');
  const writer = Writer.typed(BackendCode.NegotiateProtocolVersion, size)
    .int32(protocol)
    .int32(unsupportedOptions.length);
  for (const option of unsupportedOptions) writer.cstring(option);
  return writer.done();
}

function buildFieldMessage(code: number, fields: [string, string][]): Buffer {
  let size = 1; // the terminating zero byte
  for (const [, value] of fields) size += 1 + cstringSize(value, 'error field');
  const writer = Writer.typed(code, size);
  for (const [letter, value] of fields) writer.byte(letter.charCodeAt(0)).cstring(value);
  return writer.byte(0).done();
}
