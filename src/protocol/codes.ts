/**
 * Protocol code tables. Type codes are the first byte of a typed message; startup-phase messages
 * have no type byte and are told apart by the 32-bit request code after their length.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html
 */

/**
 * Type bytes of messages a client sends. `Startup` is not on the wire: the frame reader hands it
 * out for the untyped startup-phase messages (StartupMessage, SSLRequest, GSSENCRequest,
 * CancelRequest), so one `switch` on the code covers both phases.
 */
export const FrontendCode = {
  Startup: 0x00,
  Bind: 0x42, // B
  Close: 0x43, // C
  CopyData: 0x64, // d
  CopyDone: 0x63, // c
  CopyFail: 0x66, // f
  Describe: 0x44, // D
  Execute: 0x45, // E
  Flush: 0x48, // H
  FunctionCall: 0x46, // F
  Parse: 0x50, // P
  /** PasswordMessage, SASLInitialResponse, SASLResponse and GSSResponse share this code. */
  Password: 0x70, // p
  Query: 0x51, // Q
  Sync: 0x53, // S
  Terminate: 0x58, // X
} as const;

/** Type bytes of messages a server sends. */
export const BackendCode = {
  Authentication: 0x52, // R
  BackendKeyData: 0x4b, // K
  BindComplete: 0x32, // 2
  CloseComplete: 0x33, // 3
  CommandComplete: 0x43, // C
  CopyData: 0x64, // d
  CopyDone: 0x63, // c
  CopyInResponse: 0x47, // G
  CopyOutResponse: 0x48, // H
  CopyBothResponse: 0x57, // W
  DataRow: 0x44, // D
  EmptyQueryResponse: 0x49, // I
  ErrorResponse: 0x45, // E
  FunctionCallResponse: 0x56, // V
  NegotiateProtocolVersion: 0x76, // v
  NoData: 0x6e, // n
  NoticeResponse: 0x4e, // N
  NotificationResponse: 0x41, // A
  ParameterDescription: 0x74, // t
  ParameterStatus: 0x53, // S
  ParseComplete: 0x31, // 1
  PortalSuspended: 0x73, // s
  ReadyForQuery: 0x5a, // Z
  RowDescription: 0x54, // T
} as const;

/** The 32-bit code after the length of an untyped startup-phase message. */
export const RequestCode = {
  /** Protocol 3.0, the version this codec speaks. 3.x minors share the layout. */
  ProtocolV3: 0x0003_0000,
  CancelRequest: 80877102, // 1234 << 16 | 5678
  SSLRequest: 80877103, // 1234 << 16 | 5679
  GSSENCRequest: 80877104, // 1234 << 16 | 5680
} as const;

/** The `Authentication*` sub-code, the first Int32 of an `R` message. */
export const AuthCode = {
  Ok: 0,
  KerberosV5: 2,
  CleartextPassword: 3,
  MD5Password: 5,
  /** Unix-socket credentials; removed from Postgres in 9.1. */
  SCMCredential: 6,
  GSS: 7,
  GSSContinue: 8,
  SSPI: 9,
  SASL: 10,
  SASLContinue: 11,
  SASLFinal: 12,
} as const;

/** ReadyForQuery status: idle, in a transaction block, in a failed transaction block. */
export type TransactionStatus = 'I' | 'T' | 'E';

/** Describe / Close target: a prepared statement or a portal. */
export type PortalTarget = 'S' | 'P';

/** The proxy's default ceiling for one message; Postgres' own hard limit is 1 GiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/** Postgres refuses startup packets longer than this (MAX_STARTUP_PACKET_LENGTH). */
export const MAX_STARTUP_BYTES = 10_000;

/**
 * First byte of a TLS record. A client using direct TLS (`sslnegotiation=direct`, libpq 17)
 * opens with a ClientHello instead of an SSLRequest; the connection layer must sniff this byte
 * before handing the stream to a startup-phase frame reader, which would call it garbage.
 */
export const TLS_HANDSHAKE_BYTE = 0x16;

/** Single-byte answers to SSLRequest / GSSENCRequest. Shared: never write into them. */
export const SSL_YES: Buffer = Buffer.from('S');
export const SSL_NO: Buffer = Buffer.from('N');
export const GSSENC_NO: Buffer = Buffer.from('N');
