/**
 * The client's stream held back while the relay waits: for a decision in flight (a large statement
 * parsed off-thread, rights being loaded, a handled statement), for a backend, or for an answer
 * that may change how the next statement is read. The client socket is paused and the frames that
 * arrived meanwhile wait in order; they are replayed once nothing is awaited any more. Counted,
 * because work being applied may start waiting for more: the stream resumes when all is done.
 */
import type { Socket } from 'node:net';
import type { Frame } from './frame-queue.js';

export interface HoldHost {
  /** A frame held back, replayed (it may start another hold). */
  replay(code: number, frame: Buffer): void;
  /** The awaited work failed: told to the client (the stream goes on). */
  failed(err: unknown): void;
  /** Replaying failed: the session cannot go on. */
  fatal(err: unknown): void;
  /** All held frames were replayed (or a new hold began while replaying): before the client resumes. */
  replayed(): void;
  /** The stream resumed: nothing is held any more. */
  resumed(): void;
  /** The client left: what it sent after is not run. */
  finished(): boolean;
}

export class Hold {
  private count = 0;
  private readonly backlog: Frame[] = [];
  /** The work the stream is held for, while it lasts (a large message's budget goes back when it settles). */
  current: Promise<void> | undefined;

  constructor(
    private readonly client: Socket,
    private readonly host: HoldHost,
  ) {}

  get held(): boolean {
    return this.count > 0;
  }

  /** A frame that arrived while held: it waits its turn. */
  push(code: number, frame: Buffer): void {
    this.backlog.push({ code, frame });
  }

  /**
   * Holds the stream until `work` is done. `first`, a frame the caller could not handle yet, is
   * handled first: every frame held came after it (it was decided while they waited, or taken from
   * the head of the backlog itself).
   */
  until(work: Promise<void>, first?: Frame): void {
    if (first !== undefined) this.backlog.unshift(first);
    this.count++;
    this.client.pause();
    const done = work
      .catch((err: unknown) => this.host.finished() || this.host.failed(err))
      .then(() => {
        if (this.host.finished()) return;
        if (--this.count > 0) return; // work it started goes on: the stream resumes when that is done
        while (this.count === 0 && this.backlog.length > 0) {
          const f = this.backlog.shift()!;
          this.host.replay(f.code, f.frame);
        }
        this.host.replayed();
        if (this.count === 0 && !this.host.finished()) {
          this.client.resume();
          this.host.resumed();
        }
      })
      .catch((err: unknown) => this.host.fatal(err));
    this.current = done;
    void done.then(() => {
      if (this.current === done) this.current = undefined;
    });
  }

  /** The client left: what it sent is dropped. */
  clear(): void {
    this.backlog.length = 0;
  }
}
