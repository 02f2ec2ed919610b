/**
 * Server messages the proxy itself looks into, as decoded. Everything else it relays unread.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html
 */

/** An `R` message, keyed on what it asks for. Byte fields are views into the frame. */
export type AuthenticationRequest =
  | { kind: 'ok' }
  | { kind: 'cleartext_password' }
  | { kind: 'md5_password'; salt: Buffer }
  | { kind: 'sasl'; mechanisms: string[] }
  | { kind: 'sasl_continue'; data: Buffer }
  | { kind: 'sasl_final'; data: Buffer }
  /** Kerberos, GSS, SSPI, SCM: valid protocol the proxy does not speak; `code` says which. */
  | { kind: 'unsupported'; code: number };

export interface ParameterStatus {
  name: string;
  value: string;
}

export interface BackendKeyData {
  processId: number;
  /** The 4-byte key of protocol 3.0, as a signed Int32. */
  secretKey: number;
}

export interface NegotiateProtocolVersion {
  /** Newest protocol the server supports, e.g. 196608 for 3.0. */
  protocol: number;
  /** `_pq_.` options of the StartupMessage the server did not recognise. */
  unsupportedOptions: string[];
}
