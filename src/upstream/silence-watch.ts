/**
 * Watching upstream sessions for silence: a network that stops answering (a blackhole) otherwise
 * leaves a statement waiting for ever. `watchSilence` watches one wire client's session;
 * `SilenceWatch` the REST session pool's (session-pool.ts, option `silenceMs`).
 */
import type { Socket } from 'node:net';
import type { UpstreamSession } from './session.js';

/**
 * Watches a session's socket while it is handed out: when `awaiting()` says an answer is owed and
 * no byte has passed either way for `ms` — and not because the reader paused the socket itself
 * (a slow consumer: the silence is its own choice) — `onSilent` is called once. A network that
 * stops answering (a blackhole) otherwise leaves a statement waiting for ever: TCP neither fails
 * nor completes. Returns the function that stops watching; `ms` 0 watches nothing.
 */
export function watchSilence(socket: Socket, ms: number, awaiting: () => boolean, onSilent: () => void): () => void {
  if (ms <= 0) return () => undefined;
  const onTimeout = () => {
    if (awaiting() && !socket.isPaused()) {
      stop();
      return onSilent();
    }
    socket.setTimeout(ms); // idle with nothing owed: look again later
  };
  const stop = () => {
    socket.setTimeout(0);
    socket.off('timeout', onTimeout);
  };
  socket.setTimeout(ms);
  socket.on('timeout', onTimeout);
  return stop;
}


/**
 * Watches handed-out sessions for silence (`silenceMs`) by looking at each every so often: a
 * session whose socket passed no byte either way since the look `ms` before, and is not paused
 * by its reader (a slow consumer's own choice), is closed. The pool says at each look which
 * sessions are handed out, so a statement costs nothing here — where a socket timeout per
 * handed-out session (as `watchSilence` arms for a wire client) makes a timer, refreshes it on
 * every read and write and clears it again, and even a set of handed-out sessions is two map
 * operations on every REST request. A silent session is found between `ms` and `ms` plus one
 * look's interval after it fell silent. (A session is handed out to send a statement at once, so
 * one handed out again between two looks has passed bytes since the first.)
 */
export class SilenceWatch {
  /** Each handed-out session's bytes passed when last seen moving, and when. */
  private readonly seen = new Map<UpstreamSession, { bytes: number; since: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    /** The silence taken as a dead network: one for all sessions, or each session's own (0: never). */
    private readonly ms: number | ((session: UpstreamSession) => number),
    /** The sessions handed out right now. */
    private readonly handedOut: () => ReadonlySet<UpstreamSession>,
  ) {
    this.timer = setInterval(() => this.look(), typeof ms === 'number' ? Math.max(100, Math.min(1000, ms / 4)) : 250);
    this.timer.unref();
  }

  /** The session's silence limit (Infinity: none). */
  private limit(session: UpstreamSession): number {
    const ms = typeof this.ms === 'number' ? this.ms : this.ms(session);
    return ms > 0 ? ms : Infinity;
  }

  close(): void {
    clearInterval(this.timer);
    this.seen.clear();
  }

  private look(): void {
    const now = Date.now();
    const out = this.handedOut();
    for (const session of this.seen.keys()) if (!out.has(session)) this.seen.delete(session);
    for (const session of out) {
      const socket = session.socket;
      const bytes = socket.bytesRead + socket.bytesWritten;
      const seen = this.seen.get(session);
      if (seen === undefined || seen.bytes !== bytes || socket.isPaused()) {
        this.seen.set(session, { bytes, since: now });
      } else if (now - seen.since >= this.limit(session)) {
        this.seen.delete(session);
        socket.destroy();
      }
    }
  }
}
