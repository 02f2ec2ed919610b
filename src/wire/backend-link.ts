/**
 * The backend serving one wire client now, if any: taken from the pool (at once when one is
 * idle, else once there is room), listened to while held, and given back — after a cancel sent
 * to it has arrived, so that the cancel cannot stop another client's statement there.
 */
import type { Return } from '../upstream/session-pool.js';
import { cancelUpstream, ignore, settle, type SessionDone, type UpstreamSession } from '../upstream/session.js';
import { watchSilence } from '../upstream/silence-watch.js';
import type { BackendState } from './backend-state.js';
import type { Pooling } from './pooling.js';
import { Run } from './run.js';

/** What stops a silence watch when none is armed. */
const UNWATCHED = (): void => undefined;

/** Stands in for the upstream before a backend is attached; nothing is ever added to it. */
const NO_UPSTREAM = new Run(undefined);

export interface Link {
  session: UpstreamSession;
  run: Run;
  /** Pooling by transaction: what the backend holds. */
  backend: BackendState | undefined;
  /** A cancel sent to it: the backend serves nobody else before it has arrived. */
  cancelling?: Promise<unknown>;
}

export interface BackendLinkOptions {
  pooling: Pooling | undefined;
  /** Session mode: the client's backend, at its first request. */
  acquire(): Promise<UpstreamSession>;
  release(session: UpstreamSession, how: Return): void;
  /** `upstreamResponseTimeoutMs` (0 = never), and whether an answer is owed now. */
  responseTimeoutMs: number;
  awaiting(): boolean;
  /** The backend's data, its close, and its silence past the response timeout. */
  onData(chunk: Buffer): void;
  onGone(): void;
  onSilent(): void;
}

export class BackendLink {
  link: Link | undefined;
  /**
   * Pooling, between transactions: the backend the client gave back, lent to the pool — idle
   * there, and the next request of anybody's may take it — but still listened to as the client's
   * until one does, so that the client's own next request takes it back for nothing.
   */
  private lent: Link | undefined;
  /** Where the client's frames go: the backend's socket, or nowhere. */
  toUpstream: Run = NO_UPSTREAM;
  private unwatch: () => void = UNWATCHED;
  /** Set once the client has left: a backend that comes afterwards goes straight back. */
  finished = false;

  constructor(private readonly opts: BackendLinkOptions) {}

  /** Attaches an idle backend at once, if one is at hand (or one is attached already). */
  takeNow(): boolean {
    if (this.link !== undefined || this.takeBack()) return true;
    const idle = this.opts.pooling?.takeIdle();
    if (idle === undefined) return false;
    this.attach(idle);
    return true;
  }

  /** Attaches a backend once there is one, then calls `done` (with the error instead: 53300 past the pool timeout); at once when one is idle. */
  take(done: (err?: unknown) => void): void {
    const got: SessionDone = (err, session) => {
      if (session === undefined) return done(err ?? new Error('no backend'));
      try {
        this.attach(session);
      } catch (e: unknown) {
        return done(e);
      }
      done();
    };
    if (this.opts.pooling !== undefined) this.opts.pooling.acquire(got);
    else this.opts.acquire().then((session) => got(undefined, session), got);
  }

  private readonly attach = (session: UpstreamSession): void => {
    if (this.finished) return this.opts.release(session, session.status === 'I' ? 'keep' : 'close');
    if (this.link !== undefined) {
      this.opts.release(session, session.status === 'I' ? 'keep' : 'close');
      throw new Error('a second backend for a client that holds one'); // the relay never waits for two
    }
    const backend = this.opts.pooling?.attached(session);
    this.link = { session, run: new Run(session.socket), backend };
    this.toUpstream = this.link.run;
    session.sink = this.opts.onData;
    session.onGone = this.opts.onGone;
    this.unwatch = watchSilence(session.socket, this.opts.responseTimeoutMs, this.opts.awaiting, this.opts.onSilent);
  };

  /**
   * Pooling: the transaction is over; the backend goes back to the pool, lent (see `lent`) when
   * nothing stands in the way — no cancel on its way to it, nobody waiting for a backend.
   */
  lend(): void {
    const link = this.link;
    if (link === undefined) return;
    link.run.flush();
    if (link.cancelling === undefined && this.opts.pooling?.lend(link.session, this.revoked)) {
      this.link = undefined;
      this.toUpstream = NO_UPSTREAM;
      this.lent = link;
      return;
    }
    this.detach();
    this.giveBack(link, 'keep');
  }

  /** The lent backend attached again, if nobody has taken it meanwhile. */
  private takeBack(): boolean {
    const lent = this.lent;
    if (lent === undefined) return false;
    this.lent = undefined;
    if (!this.opts.pooling!.reclaim(lent.session)) {
      this.stopWatching();
      return false;
    }
    this.link = lent;
    this.toUpstream = lent.run;
    lent.session.sink = this.opts.onData;
    lent.session.onGone = this.opts.onGone;
    return true;
  }

  /**
   * The pool gave the lent backend to another request, or closed it. One function for every
   * lend: the pool keeps it only while the backend is lent (taking it back removes it).
   */
  private readonly revoked = (): void => {
    if (this.lent === undefined) return;
    this.lent = undefined;
    this.stopWatching();
  };

  private stopWatching(): void {
    this.unwatch();
    this.unwatch = UNWATCHED;
  }

  /** Stops listening to the backend; returns it. */
  detach(): Link | undefined {
    const link = this.link;
    if (link === undefined) return undefined;
    link.run.flush();
    link.session.sink = ignore;
    link.session.onGone = ignore;
    this.stopWatching();
    this.link = undefined;
    this.toUpstream = NO_UPSTREAM;
    return link;
  }

  /** Cancels what the backend serving the client runs now; nothing when none serves it. */
  cancel(): Promise<boolean> {
    const link = this.link;
    if (link === undefined) return Promise.resolve(false);
    const sent = cancelUpstream(link.session);
    link.cancelling = sent;
    return sent;
  }

  /**
   * The client left: the backend goes back. With `owed` answers still to come it is settled and
   * reused when `settleOwed` (closed if a transaction is open); otherwise the statement running is
   * cancelled (nobody is left to read its answer) and the backend closed at once, which frees its
   * place in the pool soonest. `clean`: the client left nothing open there.
   */
  finish(owed: number, settleOwed: boolean, inBatch: boolean, clean: boolean): void {
    this.finished = true;
    this.takeBack(); // a lent backend goes back as any other: reset first when the client's statements there are too many
    const link = this.detach();
    if (link === undefined) return;
    const upstream = link.session;
    const alive = !upstream.socket.destroyed;
    if (settleOwed && alive && owed > 0) {
      void settle(upstream, owed, inBatch).then((ok) => this.giveBack(link, this.returnHow(link, ok, true)));
      return;
    }
    if (alive && owed > 0) void cancelUpstream(upstream);
    this.giveBack(link, this.returnHow(link, clean && alive && owed === 0));
  }

  private returnHow(link: Link, clean: boolean, unread = false): Return {
    const backend = link.backend;
    if (this.opts.pooling === undefined || backend === undefined) return clean ? 'keep' : 'close';
    return this.opts.pooling.returnHow(backend, clean, unread);
  }

  /** Gives a detached backend back, once a cancel sent to it (if any) has arrived and been taken in. */
  giveBack(link: Link, how: Return): void {
    if (link.cancelling === undefined || how === 'close') return this.opts.release(link.session, how);
    // The cancel reached the postmaster, which signals the backend; once the backend has answered
    // a Sync after that, the signal was taken in while it was idle: it cannot stop another client's statement.
    void link.cancelling.then(() => settle(link.session, 0, true)).then((ok) => this.opts.release(link.session, ok ? how : 'close'));
  }
}
