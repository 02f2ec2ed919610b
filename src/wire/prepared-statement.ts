/** A client's prepared statement as the proxy keeps it (pooling by transaction), and the key backends share it by. */
import type { SessionEffect } from '../policy/index.js';

/** A named prepared statement of a client. */
export interface Prepared {
  /** Text and parameter types (protocol), or the PREPARE statement (SQL): equal keys, one server statement. */
  readonly key: string;
  readonly kind: 'protocol' | 'sql';
  /** Protocol: the text Postgres prepares (after the policy's rewrite) and the parameter type oids. SQL: the PREPARE statement. */
  readonly sql: string;
  /** The client's own text (what its effects' positions refer to). */
  readonly text: string;
  readonly paramTypes: readonly number[];
  /** What running it does to the session (its statement's effects). */
  readonly effects: readonly SessionEffect[];
  /** When the client prepared it (ms since the epoch): pg_prepared_statements' prepare_time. */
  readonly at: number;
  /** The schema generation it was prepared in (schema-generation.ts): a server statement older than that may be stale for it. */
  readonly generation: number;
}

/** The key of a protocol-level statement: its text and parameter types. */
export function protocolKey(sql: string, paramTypes: readonly number[]): string {
  return paramTypes.length === 0 ? sql : `${sql}\0${paramTypes.join(',')}`;
}
