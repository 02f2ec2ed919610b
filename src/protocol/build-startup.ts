import { PgError, SqlState } from '../shared/errors.js';
import { FrontendCode, RequestCode } from './codes.js';
import { cstringSize, Writer } from './writer.js';

/**
 * Startup-phase and authentication messages, for when the proxy is itself a client of the
 * upstream (its own login as the tenant's role, cancel forwarding).
 */

/**
 * @param params `user` is required by servers; `database`, `application_name`, … optional.
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-STARTUPMESSAGE
 */
export function buildStartupMessage(
  params: Readonly<Record<string, string>>,
  protocol: number = RequestCode.ProtocolV3,
): Buffer {
  const entries = Object.entries(params);
  let size = 4 + 1; // protocol, terminator
  for (const [name, value] of entries) {
    // An empty name would read as the terminator and cut the packet short.
    if (name === '') throw new PgError(SqlState.InvalidParameterValue, 'startup parameter name must not be empty');
    size += cstringSize(name, 'startup parameter name') + cstringSize(value, 'startup parameter');
  }
  const writer = Writer.untyped(size).int32(protocol);
  for (const [name, value] of entries) writer.cstring(name).cstring(value);
  return writer.byte(0).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-SSLREQUEST */
export function buildSslRequest(): Buffer {
  return Writer.untyped(4).int32(RequestCode.SSLRequest).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-GSSENCREQUEST */
export function buildGssEncRequest(): Buffer {
  return Writer.untyped(4).int32(RequestCode.GSSENCRequest).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-CANCELREQUEST */
export function buildCancelRequest(processId: number, secretKey: number): Buffer {
  return Writer.untyped(12)
    .int32(RequestCode.CancelRequest)
    .int32(processId)
    .int32(secretKey)
    .done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-PASSWORDMESSAGE */
export function buildPasswordMessage(password: string): Buffer {
  return Writer.typed(FrontendCode.Password, cstringSize(password, 'password'))
    .cstring(password)
    .done();
}

/**
 * @param data the client-first-message; null sends length -1 (no initial response)
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-SASLINITIALRESPONSE
 */
export function buildSaslInitialResponse(mechanism: string, data: Uint8Array | null): Buffer {
  const size = cstringSize(mechanism, 'SASL mechanism') + 4 + (data?.length ?? 0);
  const writer = Writer.typed(FrontendCode.Password, size).cstring(mechanism);
  if (data === null) return writer.int32(-1).done();
  return writer.int32(data.length).bytes(data).done();
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-SASLRESPONSE */
export function buildSaslResponse(data: Uint8Array): Buffer {
  return Writer.typed(FrontendCode.Password, data.length).bytes(data).done();
}
