/**
 * The relay's backend side (relay.ts is the client's): the state one client's relay keeps, the
 * backend serving the client (taken, handed over between transactions), the answers coming back
 * and what the client is told of them, and how a session ends. See relay.ts for the whole.
 */
import type { Socket } from 'node:net';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import type { Decision, Session, SessionChange } from '../policy/index.js';
import { PgError, SqlState, internalError } from '../shared/errors.js';
import { buildErrorResponse, decodeErrorResponse, fromClientText, inClientText, type FrameReader, type TransactionStatus } from '../protocol/index.js';
import type { Frame } from './frame-queue.js';
import { ClientNotifications } from './notifications.js';
import { Run } from './run.js';
import type { AuditEvent, AuditOrigin } from '../control/audit.js';
import { countError, wireBytesOut, type ErrorOrigin } from '../observe/metrics.js';
import { AnswerMeter } from './metering.js';
import type { Pooling } from './pooling.js';
import type { Internal, Pending } from './requests.js';
import { Answers, type AnswersHost } from './answers.js';
import { BackendLink } from './backend-link.js';
import { Backpressure } from './backpressure.js';
import { LargeMessageGate } from './large-messages.js';
import { ClientReading } from './reading.js';
import { Hold } from './hold.js';
import { Intake } from './intake.js';
import { trackQueued } from '../observe/queued.js';
import { readDirectly } from '../shared/socket-reads.js';
import { SearchPath } from './search-path.js';
import type { ClientActivity } from './activity.js';
import type { RelayDeps } from './relay-deps.js';

const DEFAULT_SEND_TIMEOUT_MS = 30_000;
export const NO_CHANGES: readonly SessionChange[] = [];

export abstract class RelayCore {
  protected readonly toClient: Run;
  protected readonly answers: Answers;
  /** The extended batch being sent: its entry is queued from its first message, completed by the ReadyForQuery after its Sync. */
  protected batch: Pending | undefined;
  protected discarding = false;
  /** The client's stream, held back while the relay waits (hold.ts). */
  protected readonly hold: Hold;
  /** Reads the client only while what it sent can go on (intake.ts). */
  protected readonly intake: Intake;
  protected readonly gate: LargeMessageGate | undefined;
  protected readonly readings: ClientReading;
  protected readonly notifications: ClientNotifications;
  protected finished = false;
  protected upstreamFatal = false;
  /** The backend serving the client now, if any. */
  protected readonly backend: BackendLink;
  protected readonly backpressure: Backpressure;
  /** Set by `closeWhenIdle`: the FATAL to end the session with once no transaction is open. */
  protected closing: PgError | undefined;
  protected readonly meter: ReturnType<ControlPlane['usage']['meter']>;
  protected batchSql: string | undefined;
  protected readonly pooling: Pooling | undefined;
  protected readonly searchPath: SearchPath;
  /** The work a large message's decision waits on, if any (large-messages.ts). */
  protected readonly judged = (): Promise<void> | undefined => this.hold.current;
  /** The client as pg_stat_activity shows it (activity.ts); set once the client has its process id. */
  activity: ClientActivity | undefined;

  constructor(
    protected readonly client: Socket,
    protected readonly clientReader: FrameReader,
    protected readonly principal: Principal,
    session: Session,
    protected readonly deps: RelayDeps,
    protected readonly onEnd: () => void,
  ) {
    this.toClient = new Run(client);
    trackQueued('client', client);
    this.searchPath = new SearchPath(session);
    this.meter = deps.control.usage.meter(principal.user);
    this.gate = deps.largeMessages === undefined ? undefined : new LargeMessageGate(deps.largeMessages, clientReader);
    this.pooling = deps.pooling;
    // The settings the next statement is read with: as the client was last told them (pooling),
    // as its backend reported them (session mode), or as it was greeted before it has one.
    this.readings = new ClientReading(() => this.pooling?.client.reported ?? this.backend.link?.session.reading ?? this.deps.greeting);
    this.notifications = new ClientNotifications(principal.user);
    this.intake = new Intake(client);
    this.hold = new Hold(this.intake, {
      replay: (code, frame) => this.onClientFrame(code, frame),
      failed: (err) => this.refuse(this.toClientError(err)),
      fatal: (err) => this.fatal(err),
      replayed: () => {
        this.backend.toUpstream.flush();
        this.intake.check(this.backend.link?.session.socket);
        if (this.closing) this.closeIfIdle();
      },
      resumed: () => this.maybeRelease(),
      finished: () => this.finished,
    });
    const meter = new AnswerMeter(this.meter, (target) => this.audit({ action: 'ddl', target, sql: this.answers.headSql }));
    this.answers = new Answers(this.toClient, this.answersHost(), meter);
    this.backend = new BackendLink({
      pooling: deps.pooling,
      acquire: deps.acquire,
      release: deps.release,
      responseTimeoutMs: deps.responseTimeoutMs ?? 0,
      awaiting: () => this.answers.length > 0,
      onData: this.onUpstreamData,
      onGone: this.onUpstreamClose,
      onSilent: this.onUpstreamSilent,
    });
    this.backpressure = new Backpressure(client, deps.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS, (pending) => {
      if (this.finished) return;
      this.deps.log.info({ pending, ms: deps.sendTimeoutMs }, 'wire client read nothing of its answer within the send timeout: closed');
      this.client.destroy();
      this.end(true, true);
    });
  }

  /** What the answers need of the relay (answers.ts). */
  protected answersHost(): AnswersHost {
    return {
      pooling: this.deps.pooling,
      upstream: () => this.backend.link!,
      requestDone: (p: Pending, before) => this.searchPath.requestDone(p.changes, p.failed, before, this.answers.status),
      // After this answer's frames: the client signalled may be this one (a notice raised by hand).
      signal: ({ kind, processId }) => queueMicrotask(() => this.deps.signal?.(kind, processId)),
      explain: (error: PgError, sql: string) => this.deps.control.explainErrorNow(error, sql),
      notification: (frame: Buffer) => this.notifications.forClient(frame, this.pooling?.senders, this.backend.link?.session.processId),
      upstreamFatal: () => void (this.upstreamFatal = true),
      answered: () => {
        if (this.answers.length === 0) this.activity?.idle(this.answers.status);
        if (this.closing) this.closeIfIdle();
      },
      text: () => this.readings.text(),
    };
  }

  /** Takes over the client socket; `early` are client frames that arrived during start-up. */
  start(early: Frame[]): void {
    this.client.on('data', this.onClientData);
    readDirectly(this.client); // past Node's stream buffering, when the socket allows (socket-reads.ts)
    this.client.on('close', this.onClientClose);
    this.client.on('error', this.onClientClose);
    for (const f of early) this.onClientFrame(f.code, f.frame);
    this.backend.toUpstream.flush();
  }

  /**
   * A CancelRequest with this client's key: sent to the backend serving it now, and nowhere when
   * none does. That backend serves no other client before the cancel has arrived (see `giveBack`).
   */
  cancel(): Promise<boolean> {
    return this.backend.cancel();
  }

  /** The process id of the backend serving the client now, if any. */
  get backendPid(): number | undefined {
    return this.backend.link?.session.processId;
  }

  get transactionStatus(): TransactionStatus {
    return this.answers.status;
  }

  /** Whether a request of the client is in flight (sent upstream, or being decided or handled). */
  get busy(): boolean {
    return this.answers.length > 0 || this.hold.held;
  }

  /** Why the client keeps its backend between transactions now (empty when it does not). */
  get pins(): readonly string[] {
    return this.pooling !== undefined && this.backend.link !== undefined ? this.pooling.client.pins() : [];
  }

  /**
   * Ends the session with `error` (as FATAL) once no transaction is open and nothing is in flight:
   * at once if that is so now, else right after the ReadyForQuery 'I' that ends it.
   */
  closeWhenIdle(error: PgError): void {
    this.closing = error;
    this.closeIfIdle();
  }

  /** Ends the session now with `error` (as FATAL); an open transaction is rolled back, as its upstream session is closed. */
  terminate(error: PgError): void {
    if (this.finished) return;
    this.toClient.flush();
    if (!this.client.destroyed) this.client.end(this.inClientText(buildErrorResponse(error, 'FATAL')));
    this.end(false);
  }

  protected closeIfIdle(): void {
    if (this.closing && this.answers.length === 0 && this.answers.status === 'I' && !this.hold.held) this.terminate(this.closing);
  }

  // ── backends ────────────────────────────────────────────────────────────────────────

  /**
   * Whether a backend serves the client, attaching one now if an idle one is at hand. Otherwise
   * the stream is held until one does (the caller stops); then `decided` applies the decision
   * made on arrival while the user's rights are the snapshot it was made with (the session it read
   * cannot change: nothing of the client's runs while it waits), or else `frame` is handled again, first.
   */
  protected ready(code: number, frame: Buffer, decided?: () => void): boolean {
    if (this.backend.takeNow()) return true;
    const rights = decided && this.deps.control.peekRights(this.principal);
    this.hold.begin();
    this.backend.take((err) => {
      if (err !== undefined) {
        this.fatal(err);
        return this.hold.end();
      }
      if (this.finished) return this.hold.end();
      try {
        if (rights !== undefined && rights === this.deps.control.peekRights(this.principal)) decided!();
        else this.hold.first(code, frame);
      } catch (e: unknown) {
        return this.hold.end(e);
      }
      this.hold.end();
    });
    return false;
  }

  /**
   * Pooling: the transaction is over and nothing is in flight. The backend goes back to the
   * pool, unless the client is pinned to it, after the check when one is due.
   */
  protected maybeRelease(): void {
    const { pooling } = this;
    const link = this.backend.link;
    if (pooling === undefined || link === undefined || this.answers.length > 0 || this.answers.status !== 'I' || this.batch !== undefined || this.hold.held || this.finished || this.closing) return;
    const next = pooling.afterTransaction(link.backend!);
    if (next === 'keep') return;
    if (next !== 'release') {
      this.sendInternal(next);
      return this.backend.toUpstream.flush();
    }
    this.backend.lend();
  }

  /** A message the proxy built (in UTF-8), in the client's encoding: for its backend, which reads that, or for the client. */
  protected inClientText(frame: Buffer): Buffer {
    return inClientText(frame, this.readings.text());
  }

  /** Pooling: what goes ahead of the client's next request on its backend (see Pooling.before). */
  protected beforeRequest(effects: Extract<Decision, { kind: 'allow' }>['effects'], query: boolean, text?: string): void {
    if (this.pooling === undefined) return;
    for (const job of this.pooling.before(this.backend.link!.backend!, this.answers.status, effects, query, text)) this.sendInternal(job);
  }

  protected sendInternal(job: Internal): void {
    for (const f of job.frames) this.backend.toUpstream.write(f);
    this.answers.internal(job);
  }

  // ── upstream → client ───────────────────────────────────────────────────────────────

  protected readonly onUpstreamData = (chunk: Buffer): void => {
    const link = this.backend.link;
    if (link === undefined) return; // lent, or let go in the middle of a chunk (restoreFailed)
    wireBytesOut.value += chunk.length;
    this.meter.bytesOut += chunk.length;
    try {
      this.answers.chunk(chunk, link.session.reader, this.onUpstreamFrame, this.attached);
      this.toClient.flush();
      this.backpressure.check(link.session.socket);
      if (this.backend.link !== undefined && this.answers.length === 0) this.maybeRelease();
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  private readonly attached = (): boolean => this.backend.link !== undefined;

  /** One frame of the backend serving the client; none once it was let go (the rest of its chunk too). */
  protected readonly onUpstreamFrame = (code: number, frame: Buffer): void => {
    if (this.backend.link !== undefined) this.answers.frame(code, frame);
  };

  /** The upstream owes an answer and passed nothing for `responseTimeoutMs`: a network that stopped answering. */
  protected readonly onUpstreamSilent = (): void => {
    const ms = this.deps.responseTimeoutMs;
    this.deps.log.warn({ ms }, 'upstream session silent past the response timeout: closed');
    this.terminate(new PgError(SqlState.ConnectionFailure, `the upstream connection did not answer within ${ms} ms`, { hint: 'Postgres or the network to it stopped answering; reconnect (other sessions are not affected)' }));
  };

  /** An audit row of this connection's user. */
  protected audit(event: Omit<AuditEvent, 'user' | keyof AuditOrigin>): void {
    const origin = this.deps.auditOrigin ?? { frontEnd: 'wire' as const, source: null, requestId: null };
    this.deps.control.audit.record({ ...origin, user: this.principal.user, ...event });
  }

  // ── endings ─────────────────────────────────────────────────────────────────────────

  protected toClientError(err: unknown): PgError {
    if (err instanceof PgError) return err;
    this.deps.log.error({ err }, 'wire relay failed');
    return internalError();
  }

  /** A decode error that is the statement's fault, not the stream's: answered, the session goes on. */
  protected statementError(err: unknown): PgError {
    if (err instanceof PgError && err.code !== SqlState.ProtocolViolation) return err;
    throw err;
  }

  protected fatal(err: unknown): void {
    const e = this.toClientError(err);
    countError('wire', 'proxy', e.code);
    if (!this.client.destroyed) this.client.end(this.inClientText(buildErrorResponse(e, 'FATAL')));
    this.end(false);
  }

  protected readonly onClientClose = (): void => this.end(true);

  /**
   * The backend's connection closed. Between transactions, with nothing that pins the client to
   * it, the client just gets another one next time; otherwise what it held is lost, as it would
   * be with Postgres: a FATAL (Postgres' own, when it sent one) and the session ends.
   */
  protected readonly onUpstreamClose = (): void => {
    const idle = this.answers.length === 0 && this.answers.status === 'I' && this.batch === undefined && this.pooling !== undefined && !this.pooling.client.pinned;
    if (idle && !this.upstreamFatal) {
      const link = this.backend.detach();
      if (link !== undefined) this.deps.release(link.session, 'close');
      return;
    }
    if (!this.upstreamFatal && !this.client.destroyed) {
      countError('wire', 'upstream', SqlState.ConnectionFailure);
      this.toClient.flush();
      this.client.write(this.inClientText(buildErrorResponse(new PgError(SqlState.ConnectionFailure, 'the upstream connection was lost', { hint: 'reconnect; other sessions are not affected' }), 'FATAL')));
    }
    this.toClient.flush();
    this.client.end();
    this.end(false);
  };

  /**
   * Pooling: the backend could not be brought to the client's session (AheadOfRequests.restore, pooling-ahead.ts). What the
   * client sent behind that did not run: it is answered with the error, the backend is closed, and
   * the client's next request gets another one. The session goes on.
   */
  restoreFailed(error: Buffer): void {
    const link = this.backend.detach();
    if (link === undefined) return;
    const e = decodeErrorResponse(fromClientText(error, this.readings.text()));
    this.deps.log.warn({ code: e.code, message: e.message }, 'wire: a pooled backend could not be given the client\'s session: closed');
    countError('wire', 'proxy', e.code);
    this.deps.release(link.session, 'close');
    // A setting Postgres takes no more (it names a text search configuration dropped since): back
    // to its default, or every later request would fail the same way.
    const setting = /parameter "([^"]+)"/.exec(e.message)?.[1];
    const reset = setting !== undefined && this.pooling?.client.resetSetting(setting.toLowerCase()) === true;
    const answer = new PgError(e.code, `could not give a pooled backend your session's settings: ${e.message}${reset ? `; "${setting}" was reset to its default` : ''}`, {
      hint: 'the statement did not run; run it again (it gets another backend)',
    });
    this.answers.abandon(this.inClientText(buildErrorResponse(answer)), this.batch, link.backend);
    if (this.batch !== undefined) {
      this.batch = undefined;
      this.discarding = true;
    }
  }

  /** Pooling: what a backend holds of the client's session could not be learnt: it cannot go on safely. */
  lost(message: string): void {
    this.deps.log.warn({ message }, 'wire client ended: its session state was lost');
    this.terminate(new PgError(SqlState.ConnectionFailure, message, { hint: 'reconnect' }));
  }

  /**
   * Detaches from both sockets and gives the backend back (see BackendLink.finish): with
   * `settleUpstream` (the client was closed at the send timeout) what it owes is settled and the
   * backend reused.
   */
  protected end(clientLeft: boolean, settleUpstream = false): void {
    if (this.finished) return;
    this.finished = true;
    this.gate?.close(this.hold.current);
    this.meter.close();
    this.toClient.flush();
    this.client.off('data', this.onClientData);
    this.hold.clear();
    this.intake.close();
    if (!this.client.destroyed) this.client.end();
    this.backpressure.stop();
    // Held for a slow client (see Backpressure): whoever takes the session next, in this tick, reads it again.
    if (this.backpressure.holding) this.backend.link?.session.socket.resume();
    const settle = settleUpstream && !this.hold.held && !this.upstreamFatal;
    this.backend.finish(this.answers.owed, settle, this.batch !== undefined, clientLeft && !this.hold.held && this.answers.status === 'I');
    this.onEnd();
  }

  // ── the client's side (relay.ts) ──────────────────────────────────────────────────────

  /** A chunk of the client's bytes: framed, and each frame handled. */
  protected abstract readonly onClientData: (chunk: Buffer) => void;
  /** One frame of the client's (also when replayed from the hold). */
  protected abstract readonly onClientFrame: (code: number, frame: Buffer) => void;
  /** A statement the proxy refuses (see Relay.refuse). */
  protected abstract refuse(error: PgError, ahead?: string, origin?: ErrorOrigin, frame?: Buffer): void;
}
