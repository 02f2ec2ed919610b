/**
 * The upstream → client side of the relay: the answers, in the order the client sent its
 * requests, also when it pipelines. `queue` holds one entry per request awaiting an answer:
 * `request` entries (the client's) and `internal` ones (the proxy's own, sent ahead of a request
 * when pooling by transaction: their answers are not the client's) complete with the upstream's
 * ReadyForQuery; `local` entries are answers the proxy makes itself, written as soon as every
 * entry before them has completed.
 */
import { errorInOriginal } from '../policy/index.js';
import type { PgError } from '../shared/errors.js';
import { BackendCode, buildErrorResponse, buildReadyForQuery, decodeDataRow, decodeErrorResponse, fromClientText, inClientText, type ClientText, type FrameHandler, type FrameReader, type TransactionStatus } from '../protocol/index.js';
import { countError } from '../observe/metrics.js';
import { noteParameterStatus, type UpstreamSession } from '../upstream/session.js';
import type { BackendState } from './backend-state.js';
import { METERED, type AnswerMeter } from './metering.js';
import type { Pooling } from './pooling.js';
import type { Internal, Pending } from './requests.js';
import type { Run } from './run.js';
import { signalOf, type Signal } from './signals.js';
import { STAND_IN_BYTES } from './stand-in.js';

// The relay imports these from here.

/**
 * The answers `lane` forwards as they came: a plain request's, with nothing in them for the proxy
 * to change or act on beyond counting (errors, notices, notifications and setting reports go the
 * whole way, through `frame`).
 */
const LANE = new Uint8Array(256);
for (const code of [BackendCode.DataRow, BackendCode.RowDescription, BackendCode.CommandComplete, BackendCode.ReadyForQuery, BackendCode.ParseComplete, BackendCode.BindComplete, BackendCode.CloseComplete, BackendCode.NoData, BackendCode.ParameterDescription, BackendCode.EmptyQueryResponse, BackendCode.PortalSuspended]) LANE[code] = 1;

type Entry = { kind: 'request'; p: Pending } | { kind: 'local'; frames: Buffer[] } | { kind: 'internal'; job: Internal; error?: Buffer };

/** What the answers need of the relay. */
export interface AnswersHost {
  readonly pooling: Pooling | undefined;
  /** The backend serving the client now (answers come only from one). */
  upstream(): { session: UpstreamSession; backend: BackendState | undefined };
  /** A request of the client's got its ReadyForQuery; `before`: the transaction status before it. */
  requestDone(p: Pending, before: TransactionStatus): void;
  /** The error in the proxy's words, for a statement whose error it can explain better. */
  explain(error: PgError, sql: string): PgError | undefined;
  /** A NoticeResponse asking to signal another client (signals.ts): acted on, not passed on. */
  signal(signal: Signal): void;
  /** A NotificationResponse as the client should see it (undefined: the proxy's own, not passed on). */
  notification(frame: Buffer): Buffer | undefined;
  /** Postgres ended the backend's session (a FATAL came). */
  upstreamFatal(): void;
  /** An answer was completed: the relay may close or release now. */
  answered(): void;
  /** The client's encoding, which the backend's messages are in. */
  text(): ClientText;
}

export class Answers {
  private readonly queue: Entry[] = [];
  /** The transaction status, as the last ReadyForQuery said. */
  status: TransactionStatus = 'I';
  /** Resolves when every request sent upstream has been answered. */
  private onDrained: (() => void) | undefined;
  /** The error of a request of the proxy's that failed, to answer the client's next request with in place of its own first error. */
  private substitute: Buffer | undefined;

  constructor(
    private readonly toClient: Run,
    private readonly host: AnswersHost,
    private readonly meter: AnswerMeter,
  ) {}

  /** Entries waiting for their answer (locals included). */
  get length(): number {
    return this.queue.length;
  }

  /** Requests sent upstream and not answered yet (theirs and the proxy's). */
  get owed(): number {
    return this.queue.reduce((n, e) => n + (e.kind === 'local' ? 0 : 1), 0);
  }

  /** The SQL of the request being answered (the audit log's DDL text). */
  get headSql(): string | undefined {
    const head = this.queue[0];
    return head?.kind === 'request' ? head.p.sql : undefined;
  }

  request(p: Pending): void {
    this.queue.push({ kind: 'request', p });
  }

  internal(job: Internal): void {
    this.queue.push({ kind: 'internal', job });
  }

  /** Frames plus ReadyForQuery, in their place in the response order. */
  respond(frames: Buffer[]): void {
    if (this.queue.length > 0) return void this.queue.push({ kind: 'local', frames });
    this.toClient.flush();
    for (const f of frames) this.toClient.write(f);
    this.toClient.write(buildReadyForQuery(this.status));
    this.host.answered();
  }

  /** Resolves once every request sent upstream has been answered. */
  drained(): Promise<void> {
    if (this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => (this.onDrained = resolve));
  }

  /** One frame from the upstream. */
  readonly frame = (code: number, frame: Buffer): void => {
    const head = this.queue[0];
    if (head?.kind === 'internal') return this.internalFrame(head, code, frame);
    if (METERED[code] === 1) this.meter.frame(code, frame, 0, frame.length);
    const p = head?.kind === 'request' ? head.p : undefined;
    switch (code) {
      case BackendCode.ReadyForQuery:
        return this.ready(frame, 0, frame.length);
      case BackendCode.NotificationResponse: {
        const shown = this.host.notification(frame);
        if (shown === undefined) return;
        frame = shown;
        break;
      }
      case BackendCode.NoticeResponse: {
        const signal = signalOf(frame);
        if (signal === undefined) break;
        return this.host.signal(signal);
      }
      case BackendCode.ParameterStatus: {
        const { session, backend } = this.host.upstream();
        noteParameterStatus(session, frame);
        if (this.host.pooling === undefined) break;
        const told = this.host.pooling.parameterStatus(backend!, frame, p !== undefined);
        if (told === undefined) return;
        frame = told;
        break;
      }
      case BackendCode.ErrorResponse: {
        if (this.substitute !== undefined && p !== undefined) {
          frame = this.substitute;
          this.substitute = undefined;
        }
        if (p !== undefined) {
          p.failed = true;
          if (p.refusal !== undefined && frame.includes(p.refused ?? STAND_IN_BYTES)) {
            this.toClient.write(p.refusal);
            p.refusal = undefined;
            return;
          }
        }
        const text = this.host.text();
        const error = decodeErrorResponse(fromClientText(frame, text));
        countError('wire', 'upstream', error.code);
        if (frame.includes('SFATAL')) this.host.upstreamFatal();
        const explained = p?.sql === undefined ? undefined : this.host.explain(error, p.sql);
        const better = explained ?? (p?.rewritten !== undefined && p.sql !== undefined && error.position !== undefined ? errorInOriginal(error, p.rewritten.sent, p.sql, p.rewritten.edits) : undefined);
        if (better !== undefined) frame = inClientText(buildErrorResponse(better), text);
        break;
      }
      default:
        if (p !== undefined && this.host.pooling !== undefined && !this.poolingFrame(p, code, frame, 0, frame.length)) return;
    }
    this.toClient.add(frame);
  };

  /**
   * A chunk from the backend: the commonest answers by the lane, the rest through `reader`, frame
   * by frame, to `onFrame`; nothing more once `attached()` says the backend was let go.
   */
  chunk(chunk: Buffer, reader: FrameReader, onFrame: FrameHandler, attached: () => boolean): void {
    let pos = 0;
    if (reader.bufferedBytes === 0) for (let to = this.lane(chunk, 0); to > pos && attached(); to = this.lane(chunk, to)) pos = to;
    if (pos < chunk.length && attached()) reader.push(pos === 0 ? chunk : chunk.subarray(pos), onFrame);
  }

  /**
   * The fast lane of the commonest answers: from `from` in `chunk` (whose frames begin there, the
   * reader holding nothing), the frames of a request of the client's whose types are all in `LANE`,
   * queued for the client by their offsets — no view and no dispatch per frame — and counted and
   * followed as `frame` and `poolingFrame` do (answers to what the proxy sent left out). Stops
   * after a ReadyForQuery (the relay may have let the backend go), at a frame it does not take or
   * at a partial one; returns where it stopped, for the rest to go through the reader and `frame`.
   */
  lane(chunk: Buffer, from: number): number {
    const end = chunk.length;
    const pooling = this.host.pooling;
    let pos = from;
    while (end - pos >= 5) {
      const head = this.queue[0];
      if (head?.kind !== 'request') break;
      const code = chunk[pos]!;
      if (LANE[code] !== 1) break;
      const length = chunk.readInt32BE(pos + 1);
      const next = pos + 1 + length;
      if (length < 4 || next > end) break;
      if (code === BackendCode.ReadyForQuery) {
        this.ready(chunk, pos, next);
        return next;
      }
      if (METERED[code] === 1) this.meter.frame(code, chunk, pos, next);
      if (pooling === undefined || this.poolingFrame(head.p, code, chunk, pos, next)) this.toClient.addRange(chunk, pos, next);
      pos = next;
    }
    return pos;
  }

  /** Pooling's part in the answers to a client's request (bytes `start` to `end` of `buf`): false for an answer to what the proxy sent. */
  private poolingFrame(p: Pending, code: number, buf: Buffer, start: number, end: number): boolean {
    const current = p.steps?.[p.stepAt];
    if (current?.hidden === true) {
      // A statement of the proxy's in the client's string (reset-restore.ts): none of its answers
      // are the client's; what it set is noted as the backend's (and the client's own again).
      if (code === BackendCode.CommandComplete) {
        p.stepAt++;
        this.host.pooling!.stepDone(this.host.upstream().backend!, current);
      }
      return false;
    }
    switch (code) {
      case BackendCode.ParseComplete:
        return p.parses?.[p.parseAt++]?.ours !== true;
      case BackendCode.CloseComplete:
        return p.closes?.[p.closeAt++]?.ours !== true;
      case BackendCode.CommandComplete:
      case BackendCode.EmptyQueryResponse: {
        const step = p.steps?.[p.stepAt++];
        const backend = this.host.upstream().backend!;
        this.host.pooling!.stepDone(backend, step);
        if (code === BackendCode.CommandComplete) this.host.pooling!.commandTag(backend, buf, start, end, step);
        return true;
      }
      case BackendCode.PortalSuspended:
        p.stepAt++;
        return true;
      default:
        return true;
    }
  }

  /** An answer to a request of the proxy's own: not the client's (but for notifications, which are). */
  private internalFrame(head: Extract<Entry, { kind: 'internal' }>, code: number, frame: Buffer): void {
    switch (code) {
      case BackendCode.ReadyForQuery:
        return this.ready(frame, 0, frame.length);
      case BackendCode.ErrorResponse:
        head.error ??= frame;
        if (frame.includes('SFATAL')) this.host.upstreamFatal();
        return;
      case BackendCode.DataRow:
        return head.job.onRow?.(decodeDataRow(frame));
      case BackendCode.ParameterStatus: {
        const { session, backend } = this.host.upstream();
        noteParameterStatus(session, frame);
        this.host.pooling?.parameterStatus(backend!, frame, false);
        return;
      }
      case BackendCode.NotificationResponse: {
        const shown = this.host.notification(frame);
        if (shown !== undefined) this.toClient.add(shown);
        return;
      }
      default:
        return;
    }
  }

  /** A ReadyForQuery: bytes `start` to `end` of `buf`. */
  private ready(buf: Buffer, start: number, end: number): void {
    const before = this.status;
    this.status = String.fromCharCode(buf[start + 5]!) as TransactionStatus;
    const { session, backend } = this.host.upstream();
    session.status = this.status;
    const head = this.queue.shift();
    if (head?.kind === 'internal') {
      if (head.job.substitute === true && head.error !== undefined) this.substitute = head.error;
      head.job.done(head.error, this.status);
    } else {
      if (head?.kind === 'request') this.requestDone(head.p, backend, before);
      this.substitute = undefined;
      this.toClient.addRange(buf, start, end);
    }
    while (this.queue[0]?.kind === 'local') {
      const local = this.queue.shift() as Extract<Entry, { kind: 'local' }>;
      for (const f of local.frames) this.toClient.write(f);
      this.toClient.write(buildReadyForQuery(this.status));
    }
    if (this.queue.length === 0 && this.onDrained) {
      const drained = this.onDrained;
      this.onDrained = undefined;
      drained();
    }
    this.host.answered();
  }

  /**
   * The backend was closed on purpose (it could not be brought to the client's session): every
   * request in flight is answered with `error` — none of them ran — and the proxy's own are
   * dropped. `open`: the extended batch still being sent, whose ReadyForQuery waits for its Sync.
   */
  abandon(error: Buffer, open: Pending | undefined, backend: BackendState | undefined): void {
    this.substitute = undefined;
    this.status = 'I';
    for (const entry of this.queue.splice(0)) {
      if (entry.kind === 'internal') continue;
      if (entry.kind === 'local') {
        for (const f of entry.frames) this.toClient.write(f);
        this.toClient.write(buildReadyForQuery(this.status));
        continue;
      }
      entry.p.failed = true;
      this.toClient.write(error);
      if (entry.p !== open) this.toClient.write(buildReadyForQuery(this.status));
      this.requestDone(entry.p, backend, 'I');
    }
    const drained = this.onDrained;
    this.onDrained = undefined;
    drained?.();
    this.host.answered();
  }

  private requestDone(p: Pending, backend: BackendState | undefined, before: TransactionStatus): void {
    this.host.requestDone(p, before);
    const pooling = this.host.pooling;
    if (pooling === undefined) return;
    // Parses left unanswered failed, or an error before them skipped them: nothing was made.
    if (p.parses !== undefined) for (let i = p.parseAt; i < p.parses.length; i++) p.parses[i]!.undo?.();
    const told = pooling.requestDone(backend!, this.status, p.failed);
    if (told !== undefined) for (const f of told) this.toClient.add(f);
  }
}
