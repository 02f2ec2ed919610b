/**
 * Signals between a user's wire clients. Pooling by transaction, a client's process id is not a
 * backend's, so `pg_cancel_backend(id)` and `pg_terminate_backend(id)` of another client's id
 * cannot reach it through Postgres: their stand-ins (src/policy/backend-pid.ts) raise a notice
 * with code SIGNAL_SQLSTATE instead, which the relay takes out of the answer and hands to the
 * cancel registry with the user the backend belongs to (cancel.ts): the client is signalled only
 * if it is that user's, here or in another process. A user raising such a notice by hand can do
 * no more than the functions do.
 */
import { SIGNAL_SQLSTATE } from '../policy/index.js';
import { decodeNoticeResponse } from '../protocol/index.js';
import type { SignalKind } from './cancel.js';

const MARK = Buffer.from(`C${SIGNAL_SQLSTATE}\0`);
const MESSAGE = /^(cancel|terminate) (\d+)$/;

/** What a client asks for another of its user's clients. */
export interface Signal {
  kind: SignalKind;
  processId: number;
}

/** The signal a NoticeResponse asks for, if it is one. */
export function signalOf(frame: Buffer): Signal | undefined {
  if (!frame.includes(MARK)) return undefined;
  const m = MESSAGE.exec(decodeNoticeResponse(frame).message);
  return m ? { kind: m[1] as SignalKind, processId: Number(m[2]) } : undefined;
}
