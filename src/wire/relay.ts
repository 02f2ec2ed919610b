/**
 * The relay between one authenticated client and the upstream backend serving it: the client's
 * side. Frames go through as their original bytes — consecutive frames of one chunk in a single
 * write — except `Query` and `Parse`, whose SQL the policy decides first, and, when pooling by
 * transaction, the prepared-statement names the proxy maps (prepared.ts). The answers come back
 * through answers.ts, in the order the client sent its requests.
 *
 * Backends: in session mode the client takes one at its first request and keeps it; pooling by
 * transaction (`pooling.ts`), it holds one from the first message that needs one until the
 * ReadyForQuery 'I' that ends its transaction (an extended batch until its Sync, a COPY until it
 * ends), unless its session state pins it there. Refusals follow stand-in.ts.
 */
import type { Socket } from 'node:net';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import type { Decision, Policy, Session, SessionChange, SessionEffect } from '../policy/index.js';
import { PgError, SqlState, internalError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { FrontendCode, buildErrorResponse, buildParse, buildQuery, decodeErrorResponse, decodeParse, decodeQuery, fromClientText, inClientText, type FrameReader, type ParseMessage, type TransactionStatus } from '../protocol/index.js';
import type { Frame } from './frame-queue.js';
import { ClientNotifications } from './notifications.js';
import { Run } from './run.js';
import type { UpstreamSession } from '../upstream/session.js';
import type { Return } from '../upstream/session-pool.js';
import type { AuditEvent, AuditOrigin } from '../control/audit.js';
import { AUDIT_SQL_MAX_CHARS } from '../control/audit-text.js';
import { countError, decisions, wireBytesIn, wireBytesOut, type ErrorOrigin } from '../observe/metrics.js';
import type { Prepared } from './prepared-statement.js';
import { AnswerMeter } from './metering.js';
import type { Internal, Pooling, Step } from './pooling.js';
import { restoresAfterResets } from './reset-restore.js';
import { splicedQuery } from './query-splices.js';
import type { Sent } from './prepared.js';
import { standIn } from './stand-in.js';
import { Answers, pending, type AnswersHost, type Pending } from './answers.js';
import { BackendLink } from './backend-link.js';
import { Backpressure } from './backpressure.js';
import { runHandled } from './handled.js';
import { LargeMessageGate, type MessageBudget } from './large-messages.js';
import { checkFunctionCall, type LargeObjectFunctions } from './large-objects.js';
import { ClientReading } from './reading.js';
import { Hold } from './hold.js';
import { Intake } from './intake.js';
import { trackQueued } from '../observe/queued.js';
import { SearchPath } from './search-path.js';
import type { ClientActivity } from './activity.js';
import type { SignalKind } from './cancel.js';

const DEFAULT_SEND_TIMEOUT_MS = 30_000;

const NO_CHANGES: readonly SessionChange[] = [];

export interface RelayDeps {
  policy: Policy;
  control: ControlPlane;
  log: Logger;
  /** The connection as the audit log names it (address, connection id). */
  auditOrigin?: AuditOrigin;
  /** `upstreamResponseTimeoutMs`: an upstream owing an answer and silent this long is taken as dead (0 = never). */
  responseTimeoutMs?: number;
  /** `pgSendTimeoutMs`: a client that reads nothing of a pending answer this long is closed. */
  sendTimeoutMs?: number;
  /** The settings the client was greeted with (session mode: its reading settings until a backend serves it). */
  greeting?: ReadonlyMap<string, string>;
  /** The process's budget for large client messages (see large-messages.ts). */
  largeMessages?: MessageBudget;
  /** The large-object functions, the only ones a FunctionCall message may call. */
  largeObjects?: LargeObjectFunctions;
  /** A backend for the client (session mode: its first request; pooling: `pooling` says). */
  acquire(): Promise<UpstreamSession>;
  /** Gives a backend back. */
  release(session: UpstreamSession, how: Return): void;
  /** Pooling by transaction; undefined in session mode. */
  pooling?: Pooling | undefined;
  /** Signals another client of the same user, by the process id it was given (signals.ts). */
  signal?(kind: SignalKind, processId: number): void;
}

export class Relay {
  private readonly toClient: Run;
  private readonly answers: Answers;
  /** The extended batch being sent: its entry is queued from its first message, completed by the ReadyForQuery after its Sync. */
  private batch: Pending | undefined;
  private discarding = false;
  /** The client's stream, held back while the relay waits (hold.ts). */
  private readonly hold: Hold;
  /** Reads the client only while what it sent can go on (intake.ts). */
  private readonly intake: Intake;
  private readonly gate: LargeMessageGate | undefined;
  private readonly readings: ClientReading;
  private readonly notifications: ClientNotifications;
  private finished = false;
  private upstreamFatal = false;
  /** The backend serving the client now, if any. */
  private readonly backend: BackendLink;
  private readonly backpressure: Backpressure;
  /** Set by `closeWhenIdle`: the FATAL to end the session with once no transaction is open. */
  private closing: PgError | undefined;
  private readonly meter: ReturnType<ControlPlane['usage']['meter']>;
  private batchSql: string | undefined;
  private readonly pooling: Pooling | undefined;
  private readonly searchPath: SearchPath;
  /** The client as pg_stat_activity shows it (activity.ts); set once the client has its process id. */
  activity: ClientActivity | undefined;

  constructor(
    private readonly client: Socket,
    private readonly clientReader: FrameReader,
    private readonly principal: Principal,
    session: Session,
    private readonly deps: RelayDeps,
    private readonly onEnd: () => void,
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
  private answersHost(): AnswersHost {
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

  private closeIfIdle(): void {
    if (this.closing && this.answers.length === 0 && this.answers.status === 'I' && !this.hold.held) this.terminate(this.closing);
  }

  // ── backends ────────────────────────────────────────────────────────────────────────

  /**
   * Whether a backend serves the client, attaching one now if an idle one is at hand. Otherwise
   * the stream is held until one does (the caller stops); then `decided` applies the decision
   * made on arrival while the user's rights are the snapshot it was made with (the session it read
   * cannot change: nothing of the client's runs while it waits), or else `frame` is handled again, first.
   */
  private ready(code: number, frame: Buffer, decided?: () => void): boolean {
    if (this.backend.takeNow()) return true;
    const rights = decided && this.deps.control.peekRights(this.principal);
    this.hold.until(
      this.backend.take().then(
        () => {
          if (this.finished) return;
          if (rights !== undefined && rights === this.deps.control.peekRights(this.principal)) decided!();
          else this.hold.first(code, frame);
        },
        (err: unknown) => this.fatal(err),
      ),
    );
    return false;
  }

  /**
   * Pooling: the transaction is over and nothing is in flight. The backend goes back to the
   * pool, unless the client is pinned to it, after the check when one is due.
   */
  private maybeRelease(): void {
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

  // ── client → upstream ───────────────────────────────────────────────────────────────

  private readonly onClientData = (chunk: Buffer): void => {
    wireBytesIn.value += chunk.length;
    this.meter.bytesIn += chunk.length;
    try {
      this.clientReader.push(chunk, this.onClientFrame);
      this.backend.toUpstream.flush();
      this.intake.check(this.backend.link?.session.socket);
      const wait = this.gate?.afterChunk(this.hold.current);
      if (wait !== undefined) this.hold.until(wait, undefined, true); // no more is read until there is room
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  private readonly onClientFrame = (code: number, frame: Buffer): void => {
    if (this.finished) return;
    if (this.hold.held) return this.hold.push(code, frame);
    switch (code) {
      case FrontendCode.Query:
        return this.onQuery(frame);
      case FrontendCode.Parse:
        return this.onParse(frame);
      case FrontendCode.Sync:
        return this.onSync(frame);
      case FrontendCode.FunctionCall:
        return this.onFunctionCall(frame);
      case FrontendCode.Terminate:
        return this.end(true);
      case FrontendCode.CopyData:
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        if (this.ready(code, frame)) this.backend.toUpstream.add(frame);
        return;
      case FrontendCode.Flush:
        if (this.discarding || (this.backend.link === undefined && this.batch === undefined)) return; // nothing to flush
        if (this.ready(code, frame)) this.backend.toUpstream.add(frame);
        return;
      default:
        // Bind, Describe, Execute, Close: part of an extended-protocol batch.
        if (this.discarding || !this.ready(code, frame)) return;
        return this.onBatchMessage(code, frame);
    }
  };

  /** The decision on `sql`: at once on the hot path (rights and analysis cached), else a Promise the stream is held for. */
  private decide(sql: string): Decision | Promise<Decision> {
    const misreading = this.readings.misread(sql);
    if (misreading) return misreading;
    const session = this.readings.session(this.searchPath.session);
    const rights = this.deps.control.peekRights(this.principal);
    const { noteListens } = this.notifications;
    const d = rights ? this.deps.policy.decide(sql, rights, session) : this.deps.control.rights(this.principal).then((r) => this.deps.policy.decide(sql, r, session));
    return d instanceof Promise ? d.then(noteListens) : noteListens(d);
  }

  /** A message the proxy built (in UTF-8), in the client's encoding: for its backend, which reads that, or for the client. */
  private inClientText(frame: Buffer): Buffer {
    return inClientText(frame, this.readings.text());
  }

  /** Whether a message that carries a statement must wait for a change of the reading settings in flight (see ClientReading.check): then it is held. */
  private awaitReading(code: number, frame: Buffer): 'wait' | 'go' | PgError {
    const check = this.readings.check(this.batch, this.answers.length);
    if (check === 'wait') this.hold.until(this.answers.drained(), { code, frame });
    return check;
  }

  private onQuery(frame: Buffer): void {
    if (this.discarding) return; // as Postgres: after an error in a batch, everything up to Sync is ignored
    if (this.awaitReading(FrontendCode.Query, frame) === 'wait') return;
    let sql: string;
    try {
      sql = decodeQuery(fromClientText(frame, this.readings.text()));
    } catch (err: unknown) {
      return this.refuse(this.statementError(err)); // bytes that are no text (22021): a statement error, as in Postgres
    }
    const d = this.decide(sql);
    if (d instanceof Promise) return this.later(d, (decided) => this.applyQuery(frame, sql, decided));
    this.applyQuery(frame, sql, d);
  }

  /** Applies a decision made off the hot path, unless the client has left meanwhile. */
  private later(d: Promise<Decision>, apply: (d: Decision) => void): void {
    this.hold.until(
      d.then((decided) => {
        if (!this.finished) apply(decided);
      }),
    );
  }

  private applyQuery(frame: Buffer, sql: string, d: Decision): void {
    switch (d.kind) {
      case 'allow':
      case 'rewrite': {
        if (!this.ready(FrontendCode.Query, frame, () => this.applyQuery(frame, sql, d))) return;
        decisions.wire[d.kind].value++;
        this.activity?.started(sql, this.answers.status);
        this.beforeRequest(d.effects, true, sql);
        this.readings.sent(d.effects);
        const p = pending(d.changes, sql);
        const backend = this.backend.link!.backend!;
        const shown = this.pooling?.hiddenShow(backend, d.effects);
        const restores = this.pooling === undefined ? undefined : restoresAfterResets(d.effects, this.pooling.client, backend);
        const spliced = splicedQuery(d, sql, shown, restores);
        if (spliced !== undefined) this.backend.toUpstream.write(this.inClientText(buildQuery(spliced)));
        else if (d.kind === 'allow') this.backend.toUpstream.add(frame);
        else this.backend.toUpstream.write(this.inClientText(buildQuery(d.sql)));
        if (shown !== undefined) p.refusal = this.inClientText(buildErrorResponse(shown.error));
        if (d.kind === 'rewrite') p.rewritten = { sent: d.sql, edits: d.edits };
        if (this.pooling !== undefined) {
          p.steps = d.effects?.map((effects): Step => ({ effects, text: sql }));
          for (const r of [...(restores ?? [])].reverse()) p.steps?.splice(r.statement + 1, 0, { effects: r.effects, text: undefined, hidden: true });
          this.pooling.client.unnamed = backend.unnamed = undefined; // a Query drops the unnamed statement
        }
        return this.answers.request(p);
      }
      case 'deny':
        decisions.wire.deny.value++;
        this.audit({ action: 'statement_denied', sql, sqlstate: d.error.code });
        return this.refuse(d.error, d.refusedAt === undefined ? '' : sql.slice(0, d.refusedAt), 'policy', frame);
      case 'handled':
        decisions.wire.handled.value++;
        return this.hold.until(
          this.answers.drained().then(async () => {
            const done = await runHandled(d, this.principal.user, sql, this.answers.status, this.deps.control, (e) => this.audit(e));
            this.meter.statements += done.length;
            this.answers.respond(done);
          }),
        );
    }
  }

  /** Pooling: what goes ahead of the client's next request on its backend (see Pooling.before). */
  private beforeRequest(effects: Extract<Decision, { kind: 'allow' }>['effects'], query: boolean, text?: string): void {
    if (this.pooling === undefined) return;
    for (const job of this.pooling.before(this.backend.link!.backend!, this.answers.status, effects, query, text)) this.sendInternal(job);
  }

  private sendInternal(job: Internal): void {
    for (const f of job.frames) this.backend.toUpstream.write(f);
    this.answers.internal(job);
  }

  /** A FunctionCall: a large-object function, sent as it came; anything else refused. */
  private onFunctionCall(frame: Buffer): void {
    if (this.discarding) return;
    try {
      checkFunctionCall(this.deps.largeObjects, frame, this.batch !== undefined);
    } catch (err: unknown) {
      return this.refuse(this.statementError(err));
    }
    if (!this.ready(FrontendCode.FunctionCall, frame)) return;
    this.beforeRequest(undefined, false);
    this.backend.toUpstream.add(frame);
    this.answers.request(pending(NO_CHANGES, undefined));
  }

  private onParse(frame: Buffer): void {
    if (this.discarding) return;
    const reading = this.awaitReading(FrontendCode.Parse, frame);
    if (reading === 'wait') return;
    if (reading !== 'go') return this.denyBatch(reading);
    let parse: ParseMessage;
    try {
      parse = decodeParse(fromClientText(frame, this.readings.text()));
    } catch (err: unknown) {
      return this.denyBatch(this.statementError(err));
    }
    const d = this.decide(parse.sql);
    if (d instanceof Promise) return this.later(d, (decided) => this.applyParse(frame, parse, decided));
    this.applyParse(frame, parse, d);
  }

  private applyParse(frame: Buffer, parse: ParseMessage, d: Decision): void {
    if ((d.kind === 'allow' || d.kind === 'rewrite') && !this.ready(FrontendCode.Parse, frame, () => this.applyParse(frame, parse, d))) return;
    decisions.wire[d.kind].value++;
    this.activity?.started(parse.sql, this.answers.status);
    if ((this.batchSql?.length ?? 0) < AUDIT_SQL_MAX_CHARS) this.batchSql = this.batchSql === undefined ? parse.sql : `${this.batchSql}\n${parse.sql}`;
    switch (d.kind) {
      case 'allow':
      case 'rewrite': {
        const batch = this.startBatch(d.effects?.[0]);
        if (d.changes.length) batch.changes = [...batch.changes, ...d.changes];
        this.readings.sent(d.effects, batch);
        const sql = d.kind === 'allow' ? parse.sql : d.sql;
        if (this.pooling === undefined) return d.kind === 'allow' ? this.backend.toUpstream.add(frame) : this.backend.toUpstream.write(this.inClientText(buildParse(parse.name, sql, parse.paramTypes)));
        const sent = this.pooling.statements.parse(this.backend.link!.backend!, parse, sql, d.effects?.[0] ?? [], frame);
        if (sent instanceof PgError) return this.denyBatch(sent, parse.name);
        return this.send(sent, frame);
      }
      case 'deny':
        this.audit({ action: 'statement_denied', sql: parse.sql, sqlstate: d.error.code });
        return this.denyBatch(d.error, parse.name, 'policy');
      case 'handled':
        return this.denyBatch(
          new PgError(SqlState.FeatureNotSupported, `${d.commandTags[0] ?? ""} of a repo needs the simple query protocol`, {
            hint: "send it without parameters (psql, or a driver's simple query), or use POST /api/v1beta/repos/",
          }),
          parse.name,
        );
    }
  }

  /** Bind, Describe, Execute, Close: forwarded, pooling mapping the statements they name. */
  private onBatchMessage(code: number, frame: Buffer): void {
    const pooling = this.pooling;
    const bound = this.batch === undefined && code === FrontendCode.Bind ? pooling?.statements.boundBy(frame) : undefined;
    if (bound !== undefined) this.activity?.started(bound.text, this.answers.status);
    const batch = this.startBatch(bound?.effects);
    const sent = pooling?.batchMessage(this.backend.link!.backend!, code, frame, batch);
    if (sent === undefined) return this.backend.toUpstream.add(frame);
    this.send(sent, frame);
  }

  /** Writes what pooling says to send for a client's message (`frame`: its own bytes, sent as they came). */
  private send(sent: readonly Sent[], frame: Buffer): void {
    const batch = this.batch!;
    for (const s of sent) {
      if (s.frame === frame) this.backend.toUpstream.add(frame);
      else this.backend.toUpstream.write(this.inClientText(s.frame));
      if (s.kind === 'parse') (batch.parses ??= []).push(s);
      else if (s.kind === 'close') (batch.closes ??= []).push(s);
      if (s.error !== undefined && batch.refusal === undefined) {
        batch.refusal = this.inClientText(buildErrorResponse(s.error.instead));
        batch.refused = s.error.names;
      }
    }
  }

  /**
   * The batch's entry, queued at its first message (after what pooling sends ahead of it, for the
   * batch's first statement when `first` says what it does: a statement later in the batch has
   * nothing sent ahead of it).
   */
  private startBatch(first?: readonly SessionEffect[]): Pending {
    if (this.batch !== undefined) return this.batch;
    this.beforeRequest(first === undefined || first.length === 0 ? undefined : [first], false);
    const batch = pending(NO_CHANGES, undefined);
    this.batch = batch;
    this.answers.request(batch);
    return batch;
  }

  /**
   * A refused Parse: Postgres' own behaviour — an error, then everything up to Sync is ignored.
   * When the batch may run in a transaction (one is open, or statements of the batch or before it
   * went upstream), the stand-in Parse fails it upstream.
   */
  private denyBatch(error: PgError, name = '', origin: ErrorOrigin = 'proxy'): void {
    countError('wire', origin, error.code);
    this.discarding = true;
    const frame = this.inClientText(buildErrorResponse(error));
    if (this.batch === undefined && this.answers.length === 0 && this.answers.status === 'I') {
      this.toClient.write(frame); // nothing to fail and nothing outstanding: tell the client at once
      return;
    }
    if (this.backend.link === undefined) return void this.answers.respond([frame]);
    const batch = this.startBatch();
    // Pooling: under a name of the proxy's, not the client's (which may name another statement there).
    const stand = this.inClientText(buildParse(this.pooling === undefined ? name : 'repobase_refused', standIn(error)));
    this.backend.toUpstream.write(stand);
    if (this.pooling !== undefined) (batch.parses ??= []).push({ frame: stand, kind: 'parse', ours: false });
    batch.refusal = frame;
  }

  private onSync(frame: Buffer): void {
    if (this.batch === undefined && (this.discarding || this.backend.link === undefined)) {
      this.answers.respond([]); // refused at once, or nothing was sent: the answer is the status
    } else if (this.ready(FrontendCode.Sync, frame)) {
      const p = this.startBatch();
      this.backend.toUpstream.add(frame);
      if (this.discarding) p.changes = NO_CHANGES;
      p.sql = this.batchSql;
      this.batch = undefined;
    } else {
      return;
    }
    this.batchSql = undefined;
    this.readings.batchEnded();
    this.discarding = false;
    this.pooling?.batchEnded();
  }

  /**
   * A statement (simple protocol) the proxy refuses. With no transaction open and nothing in
   * flight the error is answered at once; otherwise the upstream runs `ahead` (the statements of
   * the string Postgres would run before the refused one) and a stand-in that fails in its place.
   */
  private refuse(error: PgError, ahead = '', origin: ErrorOrigin = 'proxy', frame?: Buffer): void {
    const answerNow = ahead === '' && ((this.answers.length === 0 && this.answers.status === 'I') || this.backend.link === undefined);
    if (!answerNow && frame !== undefined && !this.ready(FrontendCode.Query, frame)) return; // refused again once a backend serves the client
    countError('wire', origin, error.code);
    const errorFrame = this.inClientText(buildErrorResponse(error));
    if (answerNow || this.backend.link === undefined) return this.answers.respond([errorFrame]);
    this.backend.toUpstream.write(this.inClientText(buildQuery(ahead + standIn(error))));
    this.answers.request(pending(NO_CHANGES, undefined, errorFrame));
  }

  // ── upstream → client ───────────────────────────────────────────────────────────────

  private readonly onUpstreamData = (chunk: Buffer): void => {
    const link = this.backend.link;
    if (link === undefined) return; // lent, or let go in the middle of a chunk (restoreFailed)
    wireBytesOut.value += chunk.length;
    this.meter.bytesOut += chunk.length;
    try {
      link.session.reader.push(chunk, this.onUpstreamFrame);
      this.toClient.flush();
      this.backpressure.check(link.session.socket);
      if (this.backend.link !== undefined && this.answers.length === 0) this.maybeRelease();
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  /** One frame of the backend serving the client; none once it was let go (the rest of its chunk too). */
  private readonly onUpstreamFrame = (code: number, frame: Buffer): void => {
    if (this.backend.link !== undefined) this.answers.frame(code, frame);
  };

  /** The upstream owes an answer and passed nothing for `responseTimeoutMs`: a network that stopped answering. */
  private readonly onUpstreamSilent = (): void => {
    const ms = this.deps.responseTimeoutMs;
    this.deps.log.warn({ ms }, 'upstream session silent past the response timeout: closed');
    this.terminate(new PgError(SqlState.ConnectionFailure, `the upstream connection did not answer within ${ms} ms`, { hint: 'Postgres or the network to it stopped answering; reconnect (other sessions are not affected)' }));
  };

  /** An audit row of this connection's user. */
  private audit(event: Omit<AuditEvent, 'user' | keyof AuditOrigin>): void {
    const origin = this.deps.auditOrigin ?? { frontEnd: 'wire' as const, source: null, requestId: null };
    this.deps.control.audit.record({ ...origin, user: this.principal.user, ...event });
  }

  /** Pooling: the text to prepare a SQL PREPARE again from, as the policy lets it through now (undefined: refused, or not known at once). */
  prepareText(p: Prepared): string | undefined {
    const d = this.decide(p.sql);
    if (d instanceof Promise) return undefined;
    return d.kind === 'allow' ? p.sql : d.kind === 'rewrite' ? d.sql : undefined;
  }

  // ── endings ─────────────────────────────────────────────────────────────────────────

  private toClientError(err: unknown): PgError {
    if (err instanceof PgError) return err;
    this.deps.log.error({ err }, 'wire relay failed');
    return internalError();
  }

  /** A decode error that is the statement's fault, not the stream's: answered, the session goes on. */
  private statementError(err: unknown): PgError {
    if (err instanceof PgError && err.code !== SqlState.ProtocolViolation) return err;
    throw err;
  }

  private fatal(err: unknown): void {
    const e = this.toClientError(err);
    countError('wire', 'proxy', e.code);
    if (!this.client.destroyed) this.client.end(this.inClientText(buildErrorResponse(e, 'FATAL')));
    this.end(false);
  }

  private readonly onClientClose = (): void => this.end(true);

  /**
   * The backend's connection closed. Between transactions, with nothing that pins the client to
   * it, the client just gets another one next time; otherwise what it held is lost, as it would
   * be with Postgres: a FATAL (Postgres' own, when it sent one) and the session ends.
   */
  private readonly onUpstreamClose = (): void => {
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
   * Pooling: the backend could not be brought to the client's session (Pooling.restore). What the
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
  private end(clientLeft: boolean, settleUpstream = false): void {
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
}
