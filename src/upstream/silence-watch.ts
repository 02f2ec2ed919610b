/**
 * The silence watch of the REST session pool (session-pool.ts, option `silenceMs`).
 */
import type { UpstreamSession } from './session.js';

/**
 * Watches handed-out sessions for silence (`silenceMs`) by looking at each every so often: a
 * session whose socket passed no byte either way since the look `ms` before, and is not paused
 * by its reader (a slow consumer's own choice), is closed. A look costs nothing per statement,
 * where a socket timeout per handed-out session (as `watchSilence` arms for a wire client) makes
 * a timer, refreshes it on every read and write and clears it again, for every REST request.
 * A silent session is found between `ms` and `ms` plus one look's interval after it fell silent.
 */
export class SilenceWatch {
  /** Each session's bytes passed when last seen moving, and when; undefined until its first look. */
  private readonly sessions = new Map<UpstreamSession, { bytes: number; since: number } | undefined>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly ms: number) {
    this.timer = setInterval(() => this.look(), Math.max(100, Math.min(1000, ms / 4)));
    this.timer.unref();
  }

  add(session: UpstreamSession): void {
    this.sessions.set(session, undefined);
  }

  delete(session: UpstreamSession): void {
    this.sessions.delete(session);
  }

  close(): void {
    clearInterval(this.timer);
    this.sessions.clear();
  }

  private look(): void {
    const now = Date.now();
    for (const [session, seen] of this.sessions) {
      const socket = session.socket;
      const bytes = socket.bytesRead + socket.bytesWritten;
      if (seen === undefined || seen.bytes !== bytes || socket.isPaused()) {
        this.sessions.set(session, { bytes, since: now });
      } else if (now - seen.since >= this.ms) {
        this.sessions.delete(session);
        socket.destroy();
      }
    }
  }
}
