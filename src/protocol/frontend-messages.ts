import type { PortalTarget } from './codes.js';

/**
 * Messages a client sends, as decoded. Byte fields (`data`, `params`, …) are views into the
 * frame: the frame reader never overwrites a frame, so they stay valid as long as they are held.
 *
 * @see https://www.postgresql.org/docs/current/protocol-message-formats.html
 */
export type FrontendMessage =
  | StartupMessage
  | { kind: 'ssl_request' }
  | { kind: 'gssenc_request' }
  | CancelRequestMessage
  | { kind: 'password'; password: string }
  | { kind: 'sasl_initial_response'; mechanism: string; data: Buffer | null }
  | { kind: 'sasl_response'; data: Buffer }
  | { kind: 'query'; sql: string }
  | ParseMessage
  | BindMessage
  | { kind: 'describe'; target: PortalTarget; name: string }
  | { kind: 'execute'; portal: string; maxRows: number }
  | { kind: 'sync' }
  | { kind: 'flush' }
  | { kind: 'close'; target: PortalTarget; name: string }
  | { kind: 'copy_data'; data: Buffer }
  | { kind: 'copy_done' }
  | { kind: 'copy_fail'; message: string }
  | FunctionCallMessage
  | { kind: 'terminate' };

export type FrontendKind = FrontendMessage['kind'];

/** The untyped startup-phase messages: what `FrontendCode.Startup` frames decode to. */
export type StartupPhaseMessage = Extract<
  FrontendMessage,
  { kind: 'startup' | 'ssl_request' | 'gssenc_request' | 'cancel_request' }
>;

export interface StartupMessage {
  kind: 'startup';
  /** Major version in the high 16 bits, minor in the low: 196608 is 3.0. */
  protocol: number;
  /** Null-prototype object: a client-chosen `__proto__` key is a plain key, not a prototype. */
  params: Record<string, string>;
}

export interface CancelRequestMessage {
  kind: 'cancel_request';
  processId: number;
  secretKey: number;
}

export interface ParseMessage {
  kind: 'parse';
  /** Prepared statement name; '' is the unnamed statement. */
  name: string;
  sql: string;
  /** Parameter type OIDs; 0 leaves the type to the server. */
  paramTypes: number[];
}

export interface BindMessage {
  kind: 'bind';
  portal: string;
  statement: string;
  /** 0 text, 1 binary: none (all text), one (for all), or one per parameter. */
  paramFormats: number[];
  /** Parameter values; null is SQL NULL. */
  params: (Buffer | null)[];
  resultFormats: number[];
}

export interface FunctionCallMessage {
  kind: 'function_call';
  functionOid: number;
  argFormats: number[];
  args: (Buffer | null)[];
  resultFormat: number;
}

/**
 * What a `p` message means depends on what the server asked for last; the connection layer
 * passes its auth state. `none`: no password was requested, so a `p` is a protocol violation.
 */
export type PasswordPhase = 'none' | 'password' | 'sasl_initial' | 'sasl';
