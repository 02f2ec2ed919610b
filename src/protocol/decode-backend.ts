import type { PgError } from '../shared/errors.js';
import type {
  AuthenticationRequest,
  BackendKeyData,
  NegotiateProtocolVersion,
  ParameterStatus,
} from './backend-messages.js';
import { AuthCode, BackendCode, type TransactionStatus } from './codes.js';
import { Cursor } from './cursor.js';
import { pgErrorFromFields, readErrorFields } from './error-fields.js';
import { protocolViolation } from './protocol-error.js';

// Server text is decoded leniently (`cstring(false)`): it is relayed or displayed, never judged
// by the policy, and a server in another encoding must not break the connection.

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-AUTHENTICATIONOK */
export function decodeAuthentication(frame: Buffer): AuthenticationRequest {
  const cursor = Cursor.typed(frame, BackendCode.Authentication, 'Authentication');
  const code = cursor.int32();
  let request: AuthenticationRequest;
  switch (code) {
    case AuthCode.Ok:
      request = { kind: 'ok' };
      break;
    case AuthCode.CleartextPassword:
      request = { kind: 'cleartext_password' };
      break;
    case AuthCode.MD5Password:
      request = { kind: 'md5_password', salt: cursor.bytes(4) };
      break;
    case AuthCode.SASL: {
      const mechanisms: string[] = [];
      for (let name = cursor.cstring(false); name !== ''; name = cursor.cstring(false)) {
        mechanisms.push(name);
      }
      request = { kind: 'sasl', mechanisms };
      break;
    }
    case AuthCode.SASLContinue:
      request = { kind: 'sasl_continue', data: cursor.rest() };
      break;
    case AuthCode.SASLFinal:
      request = { kind: 'sasl_final', data: cursor.rest() };
      break;
    case AuthCode.KerberosV5:
    case AuthCode.GSS:
    case AuthCode.SSPI:
    case AuthCode.GSSContinue:
    case AuthCode.SCMCredential:
      return { kind: 'unsupported', code };
    default:
      throw cursor.malformed(`unknown authentication request ${code}`);
  }
  cursor.end();
  return request;
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-READYFORQUERY */
export function decodeReadyForQuery(frame: Buffer): TransactionStatus {
  const cursor = Cursor.typed(frame, BackendCode.ReadyForQuery, 'ReadyForQuery');
  const status = cursor.byte();
  cursor.end();
  switch (status) {
    case 0x49:
      return 'I';
    case 0x54:
      return 'T';
    case 0x45:
      return 'E';
    default:
      throw cursor.malformed(`invalid transaction status ${status}`);
  }
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-PARAMETERSTATUS */
export function decodeParameterStatus(frame: Buffer): ParameterStatus {
  const cursor = Cursor.typed(frame, BackendCode.ParameterStatus, 'ParameterStatus');
  const name = cursor.cstring(false);
  const value = cursor.cstring(false);
  cursor.end();
  return { name, value };
}

/**
 * Protocol 3.0 only: a 3.2 server may send a longer key, but only to a client that asked for
 * 3.2, and the proxy asks for 3.0.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-BACKENDKEYDATA
 */
export function decodeBackendKeyData(frame: Buffer): BackendKeyData {
  const cursor = Cursor.typed(frame, BackendCode.BackendKeyData, 'BackendKeyData');
  const processId = cursor.int32();
  const secretKey = cursor.int32();
  cursor.end();
  return { processId, secretKey };
}

/**
 * The command tag, e.g. `SELECT 1`, `INSERT 0 3`.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-COMMANDCOMPLETE
 */
export function decodeCommandComplete(frame: Buffer): string {
  const cursor = Cursor.typed(frame, BackendCode.CommandComplete, 'CommandComplete');
  const tag = cursor.cstring(false);
  cursor.end();
  return tag;
}

/**
 * Every field kept: see `error-fields.ts`.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-ERRORRESPONSE
 */
export function decodeErrorResponse(frame: Buffer): PgError {
  const fields = readErrorFields(frame, BackendCode.ErrorResponse, 'ErrorResponse');
  return pgErrorFromFields(fields, 'ERROR');
}

/**
 * A notice in the same shape as an error. `LOG`, `INFO` and `DEBUG` have no `PgError.severity`:
 * those read as NOTICE with the raw one kept in `extra.severity` (and sent back as it was).
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-NOTICERESPONSE
 */
export function decodeNoticeResponse(frame: Buffer): PgError {
  return pgErrorFromFields(
    readErrorFields(frame, BackendCode.NoticeResponse, 'NoticeResponse'),
    'NOTICE',
  );
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-NEGOTIATEPROTOCOLVERSION */
export function decodeNegotiateProtocolVersion(frame: Buffer): NegotiateProtocolVersion {
  const cursor = Cursor.typed(
    frame,
    BackendCode.NegotiateProtocolVersion,
    'NegotiateProtocolVersion',
  );
  const protocol = cursor.int32();
  const count = cursor.int32();
  if (count < 0) throw cursor.malformed(`negative count ${count}`);
  const unsupportedOptions: string[] = [];
  for (let i = 0; i < count; i++) unsupportedOptions.push(cursor.cstring(false));
  cursor.end();
  return { protocol, unsupportedOptions };
}

/** One column of a RowDescription: what the REST API needs to name and type it. */
export interface FieldDescription {
  name: string;
  typeOid: number;
  typmod: number;
}

/** @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-ROWDESCRIPTION */
export function decodeRowDescription(frame: Buffer): FieldDescription[] {
  const cursor = Cursor.typed(frame, BackendCode.RowDescription, 'RowDescription');
  const n = cursor.int16();
  const fields: FieldDescription[] = [];
  for (let i = 0; i < n; i++) {
    const name = cursor.cstring(false);
    cursor.int32(); // table oid
    cursor.int16(); // column number
    const typeOid = cursor.uint32();
    cursor.int16(); // type size
    const typmod = cursor.int32();
    cursor.int16(); // format: text, as requested
    fields.push({ name, typeOid, typmod });
  }
  cursor.end();
  return fields;
}

/**
 * Text-format values of a DataRow: each the text Postgres printed, or null. Read by offset, not
 * through a Cursor: this runs once per row of every REST result.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html#PROTOCOL-MESSAGE-FORMATS-DATAROW
 */
export function decodeDataRow(frame: Buffer): (string | null)[] {
  // Bounds checked by hand: a short or negative count must be a 08P01, not a RangeError.
  if (frame.length < 7) throw protocolViolation('malformed DataRow message: message is truncated');
  const n = frame.readInt16BE(5);
  if (n < 0) throw protocolViolation(`malformed DataRow message: negative column count ${n}`);
  const values = new Array<string | null>(n);
  let pos = 7;
  for (let i = 0; i < n; i++) {
    if (pos + 4 > frame.length) throw protocolViolation('DataRow value runs past the message');
    const len = frame.readInt32BE(pos);
    pos += 4;
    if (len < 0) {
      values[i] = null;
    } else {
      if (pos + len > frame.length) throw protocolViolation('DataRow value runs past the message');
      values[i] = frame.toString('utf8', pos, pos + len);
      pos += len;
    }
  }
  return values;
}
