/**
 * The client's stream held back while the relay waits: for a decision in flight (a large statement
 * parsed off-thread, rights being loaded, a handled statement), for a backend, or for an answer
 * that may change how the next statement is read. The frames that arrive meanwhile wait in order;
 * they are replayed once nothing is awaited any more. Counted, because work being applied may
 * start waiting for more: the stream resumes when all is done.
 *
 * The client socket is paused once the frames waiting pass `PAUSE_AFTER_BYTES` (or at once, when
 * the wait is for room for a large message): a client that sends one request and waits for its
 * answer — nearly every client waiting for a backend — costs no pause and resume.
 */
import type { Frame } from './frame-queue.js';
import { Stop, type Intake } from './intake.js';

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

/** Bytes of frames held back before the client socket is paused. */
export const PAUSE_AFTER_BYTES = 64 * 1024;

export class Hold {
  private count = 0;
  /** Holds of `begin` not yet ended, and the promise `current` made for them when asked. */
  private begun = 0;
  private begunWork: { promise: Promise<void>; resolve: () => void } | undefined;
  private readonly backlog: Frame[] = [];
  /** Bytes of the frames in `backlog`. */
  private bytes = 0;
  /** The latest work of `until`, while it lasts. */
  private work: Promise<void> | undefined;

  constructor(
    private readonly intake: Intake,
    private readonly host: HoldHost,
  ) {}

  get held(): boolean {
    return this.count > 0;
  }

  /**
   * The work the stream is held for, while it lasts (a large message's budget goes back when it
   * settles): a wait of `begin` while one lasts (a promise made only when asked), else `until`'s.
   */
  get current(): Promise<void> | undefined {
    if (this.begun === 0) return this.work;
    if (this.begunWork === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.begunWork = { promise, resolve };
    }
    return this.begunWork.promise;
  }

  /**
   * Holds the stream until `end` is called: a wait with no promise, for a backend — which many
   * clients on few backends wait for every transaction.
   */
  begin(): void {
    this.count++;
    this.begun++;
  }

  /** Ends a wait of `begin`; `err`: it failed (told to the client, whose stream goes on). */
  end(err?: unknown): void {
    if (--this.begun === 0 && this.begunWork !== undefined) {
      this.begunWork.resolve();
      this.begunWork = undefined;
    }
    if (err !== undefined && !this.host.finished()) this.host.failed(err);
    try {
      this.release();
    } catch (e: unknown) {
      this.host.fatal(e);
    }
  }

  /** A frame that arrived while held: it waits its turn. */
  push(code: number, frame: Buffer): void {
    this.backlog.push({ code, frame });
    this.bytes += frame.length;
    if (this.bytes > PAUSE_AFTER_BYTES) this.pause();
  }

  private pause(): void {
    this.intake.stop(Stop.Hold);
  }

  /**
   * Holds the stream until `work` is done. `first`, a frame the caller could not handle yet, is
   * handled first: every frame held came after it (it was decided while they waited, or taken from
   * the head of the backlog itself). `pauseNow`: the client socket is paused at once (the wait is
   * for room to read more), not only once the frames held pass `PAUSE_AFTER_BYTES`.
   */
  until(work: Promise<void>, first?: Frame, pauseNow = false): void {
    if (first !== undefined) this.first(first.code, first.frame);
    this.count++;
    if (pauseNow) this.pause();
    const done: Promise<void> = work
      .then(
        () => this.settled(done),
        (err: unknown) => {
          if (!this.host.finished()) this.host.failed(err);
          this.settled(done);
        },
      )
      .catch((err: unknown) => this.host.fatal(err));
    this.work = done;
  }

  /** The work of `until` is done (or failed, and the client was told). */
  private settled(done: Promise<void>): void {
    if (this.work === done) this.work = undefined;
    this.release();
  }

  /** A wait is over: the held frames are replayed once nothing else is awaited. */
  private release(): void {
    if (this.host.finished()) return;
    if (--this.count > 0) return; // work it started goes on: the stream resumes when that is done
    while (this.count === 0 && this.backlog.length > 0) {
      const f = this.backlog.shift()!;
      this.bytes -= f.frame.length;
      this.host.replay(f.code, f.frame);
    }
    this.host.replayed();
    if (this.count === 0 && !this.host.finished()) {
      this.intake.go(Stop.Hold);
      this.host.resumed();
    }
  }

  /**
   * A frame to handle first once the work is done: the work that holds the stream was to handle
   * it, and found it could not (every frame held came after it).
   */
  first(code: number, frame: Buffer): void {
    this.backlog.unshift({ code, frame });
    this.bytes += frame.length;
  }

  /** The client left: what it sent is dropped. */
  clear(): void {
    this.backlog.length = 0;
    this.bytes = 0;
  }
}
