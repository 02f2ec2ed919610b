/**
 * DISCARD ALL on a session given back to its pool before it is pooled again (session mode, or a
 * pooled backend whose state is not known), read on the session's own socket.
 */
import { BackendCode, buildQuery, decodeReadyForQuery } from '../protocol/index.js';
import { noteParameterStatus, type UpstreamSession } from './session.js';

const DISCARD = buildQuery('DISCARD ALL');

/** Sends DISCARD ALL; `done(true)` once the session is idle and clean, `done(false)` when it failed; `gone` if it closes meanwhile. */
export function discardAll(session: UpstreamSession, done: (ok: boolean) => void, gone: () => void): void {
  const socket = session.socket;
  let ok = true;
  const onData = (chunk: Buffer) => {
    try {
      session.reader.push(chunk, (code, frame) => {
        if (code === BackendCode.ErrorResponse) ok = false;
        if (code === BackendCode.ParameterStatus) noteParameterStatus(session, frame);
        if (code !== BackendCode.ReadyForQuery) return;
        session.status = decodeReadyForQuery(frame);
        socket.off('data', onData);
        socket.off('close', onClose);
        done(ok && session.status === 'I');
      });
    } catch {
      done(false);
    }
  };
  const onClose = () => gone();
  socket.on('data', onData);
  socket.once('close', onClose);
  socket.write(DISCARD);
}
