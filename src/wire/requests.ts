/**
 * The requests the relay sends upstream and waits on: the client's own (`Pending`, with the steps
 * pooling follows in it) and the proxy's (`Internal`). Shared by the answers (answers.ts) and
 * pooling (pooling.ts), which depend on these types rather than on each other.
 */
import type { Decision, SessionChange, SessionEffect } from '../policy/index.js';
import type { TransactionStatus } from '../protocol/index.js';
import type { Sent } from './prepared.js';

/** What one statement (a Query's) or one Execute (a batch's) does to the session, and the text its effects point into. */
export interface Step {
  effects: readonly SessionEffect[];
  text: string | undefined;
  /** A statement of the proxy's in the client's string (reset-restore.ts): its answers are not the client's. */
  hidden?: true;
}

/** Whether no statement of these does anything to the session (then pooling has nothing to follow or send for them). */
export function noEffects(effects: readonly (readonly SessionEffect[])[] | undefined): boolean {
  if (effects === undefined) return true;
  for (const list of effects) if (list.length > 0) return false;
  return true;
}

/** A request of the proxy's own on the backend: its frames are written, its answers end at its ReadyForQuery. */
export interface Internal {
  frames: Buffer[];
  /** Each row it returns (the check). */
  onRow?(row: (string | null)[]): void;
  /** At its ReadyForQuery: `error` is the first error it got, if any. */
  done(error: Buffer | undefined, status: TransactionStatus): void;
  /** Its error, if it fails, is the one the client's next request answers with in place of its own first error. */
  substitute?: boolean;
}

/** A client's request sent upstream: a Query, or an extended batch from its first message to its Sync. */
export interface Pending {
  changes: readonly SessionChange[];
  /** The SQL sent (the batch's Parse texts for the extended protocol): the text of DDL in the audit log. */
  sql?: string | undefined;
  failed: boolean;
  /** The proxy's ErrorResponse for a refused statement, in place of its stand-in's (or of the error naming `refused`). */
  refusal: Buffer | undefined;
  refused?: Buffer;
  /** A rewritten Query: the text sent and what the rewrites changed, to count error positions in the client's text. */
  rewritten?: { sent: string; edits: Extract<Decision, { kind: 'rewrite' }>['edits'] };
  /** Pooling by transaction: what each statement (Query) or Execute (batch) does to the session. */
  steps?: (Step | undefined)[];
  stepAt: number;
  /** Pooling by transaction: Parse and Close messages sent for it, to tell the proxy's answers from the client's. */
  parses?: Sent[];
  parseAt: number;
  closes?: Sent[];
  closeAt: number;
}

export function pending(changes: readonly SessionChange[], sql: string | undefined, refusal?: Buffer): Pending {
  return { changes, sql, failed: false, refusal, stepAt: 0, parseAt: 0, closeAt: 0 };
}
