import { RequestCode } from './codes.js';
import { Cursor } from './cursor.js';
import type { StartupPhaseMessage } from './frontend-messages.js';
import { protocolViolation } from './protocol-error.js';

/**
 * Decodes an untyped startup-phase frame (code `FrontendCode.Startup`): StartupMessage,
 * SSLRequest, GSSENCRequest or CancelRequest. Minor protocol versions above 0 are returned as
 * sent: answering them with NegotiateProtocolVersion is the connection layer's decision.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html
 */
export function decodeStartup(frame: Buffer): StartupPhaseMessage {
  if (frame.length < 8 || frame.readInt32BE(0) !== frame.length) {
    throw protocolViolation('invalid length of startup packet');
  }
  const request = frame.readInt32BE(4);
  switch (request) {
    case RequestCode.SSLRequest:
      exactLength(frame, 8, 'SSLRequest');
      return { kind: 'ssl_request' };
    case RequestCode.GSSENCRequest:
      exactLength(frame, 8, 'GSSENCRequest');
      return { kind: 'gssenc_request' };
    case RequestCode.CancelRequest:
      // 16 bytes = a 4-byte key (protocol 3.0). Protocol 3.2's longer keys only come back to a
      // server that handed them out, and the proxy hands out 4-byte keys.
      exactLength(frame, 16, 'CancelRequest');
      return {
        kind: 'cancel_request',
        processId: frame.readInt32BE(8),
        secretKey: frame.readInt32BE(12),
      };
    default:
      if (request >>> 16 !== 3) {
        throw protocolViolation(
          `unsupported frontend protocol ${request >>> 16}.${request & 0xffff}: server supports 3.0`,
        );
      }
      return { kind: 'startup', protocol: request, params: decodeParams(frame) };
  }
}

function decodeParams(frame: Buffer): Record<string, string> {
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  const cursor = new Cursor(frame, 8, 'StartupMessage');
  for (;;) {
    if (cursor.remaining === 0) {
      throw protocolViolation('invalid startup packet layout: expected terminator as last byte');
    }
    // An empty name is the terminator, which must end the packet.
    if (cursor.peek() === 0) {
      cursor.byte();
      cursor.end();
      return params;
    }
    // Lenient UTF-8: the client encoding is not known yet (Postgres does not check either), and
    // the proxy never relays these bytes, it builds its own upstream StartupMessage.
    const name = cursor.cstring(false);
    params[name] = cursor.cstring(false);
  }
}

function exactLength(frame: Buffer, length: number, what: string): void {
  if (frame.length !== length) {
    throw protocolViolation(`invalid length of ${what}: ${frame.length}, expected ${length}`);
  }
}
