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
import { misread, type Decision, type Policy, type Session, type SessionChange, type SessionEffect } from '../policy/index.js';
import { PgError, SqlState, internalError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { FrontendCode, buildErrorResponse, buildParse, buildQuery, decodeParse, decodeQuery, fromClientText, inClientText, type ClientText, type FrameReader, type ParseMessage, type TransactionStatus } from '../protocol/index.js';
import type { Frame } from './frame-queue.js';
import { notificationForClient, type Senders } from './notifications.js';
import { Run } from './run.js';
import { cancelUpstream, settle, type UpstreamSession } from '../upstream/session.js';
import type { Return } from '../upstream/session-pool.js';
import type { AuditEvent, AuditOrigin } from '../control/audit.js';
import { AUDIT_SQL_MAX_CHARS } from '../control/audit-text.js';
import { countError, decisions, wireBytesIn, wireBytesOut, type ErrorOrigin } from '../observe/metrics.js';
import type { Prepared } from './client-state.js';
import { AnswerMeter } from './metering.js';
import type { Internal, Pooling, Step } from './pooling.js';
import type { Sent } from './prepared.js';
import { standIn } from './stand-in.js';
import { Answers, pending, type AnswersHost, type Pending } from './answers.js';
import { BackendLink, type Link } from './backend-link.js';
import { Backpressure } from './backpressure.js';
import { runHandled } from './handled.js';
import { LargeMessageGate, type MessageBudget } from './large-messages.js';
import type { LargeObjectFunctions } from './large-objects.js';
import { mayChangeReading, TextOf, UNREADABLE } from './reading.js';

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
}

export class Relay {
  private readonly toClient: Run;
  private readonly answers: Answers;
  /** The extended batch being sent: its entry is queued from its first message, completed by the ReadyForQuery after its Sync. */
  private batch: Pending | undefined;
  private discarding = false;
  /**
   * Work the client's stream waits for: a decision in flight (large statement parsed off-thread,
   * rights being loaded, a handled statement), or a backend awaited. Counted, because applying a
   * decision may start waiting for a backend: the stream resumes when both are done.
   */
  private blocks = 0;
  private get blocked(): boolean {
    return this.blocks > 0;
  }
  /** The work the stream is blocked on, while it lasts (a large message's budget goes back when it settles). */
  private blocking: Promise<void> | undefined;
  private readonly gate: LargeMessageGate | undefined;
  private readonly backlog: Frame[] = [];
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
  /** Pooling: what the portals bound in this batch run (their statements' effects). */
  private readonly portals = new Map<string, Step | undefined>();

  constructor(
    private readonly client: Socket,
    private readonly clientReader: FrameReader,
    private readonly principal: Principal,
    private session: Session,
    private readonly deps: RelayDeps,
    private readonly onEnd: () => void,
  ) {
    this.toClient = new Run(client);
    this.meter = deps.control.usage.meter(principal.user);
    this.gate = deps.largeMessages === undefined ? undefined : new LargeMessageGate(deps.largeMessages, clientReader);
    this.pooling = deps.pooling;
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
      requestDone: (p: Pending) => {
        if (!p.failed) this.apply(p.changes);
      },
      explain: (error: PgError, sql: string) => this.deps.control.explainErrorNow(error, sql),
      notification: (frame: Buffer) => notificationForClient(frame, this.principal.user, this.listenedAs, this.senders()),
      upstreamFatal: () => void (this.upstreamFatal = true),
      answered: () => {
        if (this.closing) this.closeIfIdle();
      },
      text: () => this.text(),
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

  get transactionStatus(): TransactionStatus {
    return this.answers.status;
  }

  /** Whether a request of the client is in flight (sent upstream, or being decided or handled). */
  get busy(): boolean {
    return this.answers.length > 0 || this.blocked;
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
    if (this.closing && this.answers.length === 0 && this.answers.status === 'I' && !this.blocked) this.terminate(this.closing);
  }

  // ── backends ────────────────────────────────────────────────────────────────────────

  /**
   * Whether a backend serves the client, attaching one now if an idle one is at hand. Otherwise
   * `frame` waits at the head of the backlog until one is: the caller stops. At the head, because
   * every frame in the backlog came after it (it was decided while they waited, or taken from the
   * head of the backlog itself).
   */
  private ready(code: number, frame: Buffer): boolean {
    if (this.backend.takeNow()) return true;
    this.backlog.unshift({ code, frame });
    this.block(this.backend.take().catch((err: unknown) => this.fatal(err)));
    return false;
  }

  /**
   * Pooling: the transaction is over and nothing is in flight. The backend goes back to the
   * pool, unless the client is pinned to it, after the check when one is due.
   */
  private maybeRelease(): void {
    const { pooling } = this;
    const link = this.backend.link;
    if (pooling === undefined || link === undefined || this.answers.length > 0 || this.answers.status !== 'I' || this.batch !== undefined || this.blocked || this.finished || this.closing) return;
    const next = pooling.afterTransaction(link.backend!);
    if (next === 'keep') return;
    if (next !== 'release') {
      this.sendInternal(next);
      return this.backend.toUpstream.flush();
    }
    this.backend.detach();
    this.backend.giveBack(link, 'keep');
  }

  // ── client → upstream ───────────────────────────────────────────────────────────────

  private readonly onClientData = (chunk: Buffer): void => {
    wireBytesIn.value += chunk.length;
    this.meter.bytesIn += chunk.length;
    try {
      this.clientReader.push(chunk, this.onClientFrame);
      this.backend.toUpstream.flush();
      const wait = this.gate?.afterChunk(this.blocking);
      if (wait !== undefined) this.block(wait);
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  private readonly onClientFrame = (code: number, frame: Buffer): void => {
    if (this.finished) return;
    if (this.blocked) {
      this.backlog.push({ code, frame });
      return;
    }
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

  /** The decision on `sql`: at once on the hot path (rights and analysis cached), else a Promise the stream blocks on. */
  private decide(sql: string): Decision | Promise<Decision> {
    const reading = this.reading();
    if (reading !== undefined && this.text() === UNREADABLE) {
      const misreading = misread(sql, reading);
      if (misreading) return misreading;
    }
    // With standard_conforming_strings off, '…' strings are read as Postgres reads them so.
    const session = reading?.get('standard_conforming_strings') === 'off' ? { ...this.session, standardConformingStrings: false } : this.session;
    const rights = this.deps.control.peekRights(this.principal.user);
    const d = rights ? this.deps.policy.decide(sql, rights, session) : this.deps.control.rights(this.principal.user).then((r) => this.deps.policy.decide(sql, r, session));
    return d instanceof Promise ? d.then(this.noteListens) : this.noteListens(d);
  }

  /**
   * The settings the client's next statement is read with (client_encoding,
   * standard_conforming_strings): as the client was last told them (pooling), as its backend
   * reported them (session mode), or as it was greeted before it has one.
   */
  private reading(): ReadonlyMap<string, string> | undefined {
    return this.pooling?.client.reported ?? this.backend.link?.session.reading ?? this.deps.greeting;
  }

  private readonly texts = new TextOf();
  /** The client's text: its client_encoding (see TextOf). */
  text(): ClientText {
    return this.texts.of(this.reading()?.get('client_encoding'));
  }

  /** A message the proxy built (in UTF-8), in the client's encoding: for its backend, which reads that, or for the client. */
  private inClientText(frame: Buffer): Buffer {
    return inClientText(frame, this.text());
  }

  /** Pooling: who sent the client's notifications, and the backend serving it now (see notifications.ts). */
  private senders(): { senders: Senders; own: number | undefined } | undefined {
    const senders = this.pooling?.senders;
    return senders === undefined ? undefined : { senders, own: this.backend.link?.session.processId };
  }

  /** Channels LISTENed to by their "<user>/…" name, shown by it (see notifications.ts). */
  private readonly listenedAs = new Set<string>();
  private readonly noteListens = (d: Decision): Decision => {
    if ((d.kind === 'allow' || d.kind === 'rewrite') && d.listens !== undefined) for (const c of d.listens) this.listenedAs.add(c);
    return d;
  };

  /** Holds the client's frames back until `work` (and any work it started) is done: they wait in `backlog`. */
  private block(work: Promise<void>): void {
    this.blocks++;
    this.client.pause();
    const done = work
      .catch((err: unknown) => this.finished || this.refuse(this.toClientError(err)))
      .then(() => {
        if (this.finished) return; // the client left: what it sent after is not run
        if (--this.blocks > 0) return; // work it started goes on: the stream resumes when that is done
        while (!this.blocked && this.backlog.length > 0) {
          const f = this.backlog.shift()!;
          this.onClientFrame(f.code, f.frame);
        }
        this.backend.toUpstream.flush();
        if (this.closing) this.closeIfIdle();
        if (!this.blocked && !this.finished) {
          this.client.resume();
          this.maybeRelease();
        }
      })
      .catch((err: unknown) => this.fatal(err));
    this.blocking = done;
    void done.then(() => {
      if (this.blocking === done) this.blocking = undefined;
    });
  }

  /**
   * Whether a message that carries a statement must wait: a request in flight may change how
   * Postgres reads it (see `mayChangeReading`), so it is read once that one is answered. Inside
   * the extended batch that made the change, waiting would wait for ever (nothing is answered
   * before Sync): `refuse` instead.
   */
  private awaitReading(code: number, frame: Buffer): 'wait' | 'refuse' | 'go' {
    if (this.readingBatch !== undefined && this.readingBatch === this.batch) return 'refuse';
    if (!this.readingInFlight) return 'go';
    if (this.answers.length === 0) {
      this.readingInFlight = false;
      return 'go';
    }
    this.backlog.unshift({ code, frame }); // at the head, as in `ready`: everything in the backlog came after it
    this.block(this.answers.drained());
    return 'wait';
  }

  /** A request that may change the reading settings is in flight (see `awaitReading`). */
  private readingInFlight = false;
  /** The extended batch that may change them, while it lasts. */
  private readingBatch: Pending | undefined;

  private onQuery(frame: Buffer): void {
    if (this.discarding) return; // as Postgres: after an error in a batch, everything up to Sync is ignored
    if (this.awaitReading(FrontendCode.Query, frame) === 'wait') return;
    let sql: string;
    try {
      sql = decodeQuery(fromClientText(frame, this.text()));
    } catch (err: unknown) {
      return this.refuse(this.statementError(err)); // bytes that are no text (22021): a statement error, as in Postgres
    }
    const d = this.decide(sql);
    if (d instanceof Promise) return this.later(d, (decided) => this.applyQuery(frame, sql, decided));
    this.applyQuery(frame, sql, d);
  }

  /** Applies a decision made off the hot path, unless the client has left meanwhile. */
  private later(d: Promise<Decision>, apply: (d: Decision) => void): void {
    this.block(
      d.then((decided) => {
        if (!this.finished) apply(decided);
      }),
    );
  }

  private applyQuery(frame: Buffer, sql: string, d: Decision): void {
    switch (d.kind) {
      case 'allow':
      case 'rewrite': {
        if (!this.ready(FrontendCode.Query, frame)) return; // decided again once a backend serves the client
        decisions.wire[d.kind].value++;
        this.beforeRequest(d.effects, true);
        if (mayChangeReading(d.effects) !== false) this.readingInFlight = true;
        if (d.kind === 'allow') this.backend.toUpstream.add(frame);
        else this.backend.toUpstream.write(this.inClientText(buildQuery(d.sql)));
        const p = pending(d.changes, sql);
        if (d.kind === 'rewrite') p.rewritten = { sent: d.sql, edits: d.edits };
        if (this.pooling !== undefined) {
          p.steps = d.effects?.map((effects) => ({ effects, text: sql }));
          this.pooling.client.unnamed = this.backend.link!.backend!.unnamed = undefined; // a Query drops the unnamed statement
        }
        return this.answers.request(p);
      }
      case 'deny':
        decisions.wire.deny.value++;
        this.audit({ action: 'statement_denied', sql, sqlstate: d.error.code });
        return this.refuse(d.error, d.refusedAt === undefined ? '' : sql.slice(0, d.refusedAt), 'policy', frame);
      case 'handled':
        decisions.wire.handled.value++;
        return this.block(
          this.answers.drained().then(async () => {
            const done = await runHandled(d, this.principal.user, sql, this.answers.status, this.deps.control, (e) => this.audit(e));
            this.meter.statements += done.length;
            this.answers.respond(done);
          }),
        );
    }
  }

  /** Pooling: what goes ahead of the client's next request on its backend (see Pooling.before). */
  private beforeRequest(effects: Extract<Decision, { kind: 'allow' }>['effects'], query: boolean): void {
    if (this.pooling === undefined) return;
    for (const job of this.pooling.before(this.backend.link!.backend!, this.answers.status, effects, query)) this.sendInternal(job);
  }

  private sendInternal(job: Internal): void {
    for (const f of job.frames) this.backend.toUpstream.write(f);
    this.answers.internal(job);
  }

  /** A FunctionCall: a large-object function, sent as it came; anything else refused. */
  private onFunctionCall(frame: Buffer): void {
    if (this.discarding) return;
    try {
      if (this.batch !== undefined) throw new PgError(SqlState.FeatureNotSupported, 'a function call cannot come inside an extended-protocol batch', { hint: 'send Sync first' });
      if (this.deps.largeObjects === undefined) throw new PgError(SqlState.FeatureNotSupported, 'the function call protocol message is not supported', { hint: 'call the function in a SELECT' });
      this.deps.largeObjects.call(frame);
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
    if (reading === 'refuse') {
      return this.denyBatch(new PgError(SqlState.FeatureNotSupported, 'a statement after one that changes client_encoding or standard_conforming_strings must come after its Sync', { hint: 'send Sync after the statement that changes the setting, then the next one' }));
    }
    let parse: ParseMessage;
    try {
      parse = decodeParse(fromClientText(frame, this.text()));
    } catch (err: unknown) {
      return this.denyBatch(this.statementError(err));
    }
    const d = this.decide(parse.sql);
    if (d instanceof Promise) return this.later(d, (decided) => this.applyParse(frame, parse, decided));
    this.applyParse(frame, parse, d);
  }

  private applyParse(frame: Buffer, parse: ParseMessage, d: Decision): void {
    if ((d.kind === 'allow' || d.kind === 'rewrite') && !this.ready(FrontendCode.Parse, frame)) return;
    decisions.wire[d.kind].value++;
    if ((this.batchSql?.length ?? 0) < AUDIT_SQL_MAX_CHARS) this.batchSql = this.batchSql === undefined ? parse.sql : `${this.batchSql}\n${parse.sql}`;
    switch (d.kind) {
      case 'allow':
      case 'rewrite': {
        const batch = this.startBatch(d.effects?.[0]);
        if (d.changes.length) batch.changes = [...batch.changes, ...d.changes];
        const reading = mayChangeReading(d.effects);
        if (reading !== false) this.readingInFlight = true;
        // Inside the batch only a change it surely makes refuses what follows (code out of sight
        // rarely changes the reading, and batches of function calls are common).
        if (reading === 'surely') this.readingBatch = batch;
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
    const batch = this.startBatch(this.batch === undefined && code === FrontendCode.Bind ? pooling?.statements.effectsOf(frame) : undefined);
    if (pooling === undefined) return this.backend.toUpstream.add(frame);
    const backend = this.backend.link!.backend!;
    if (code === FrontendCode.Execute) {
      (batch.steps ??= []).push(this.portals.size === 0 ? undefined : this.portals.get(frame.toString('utf8', 5, frame.indexOf(0, 5))));
      return this.backend.toUpstream.add(frame);
    }
    if (code === FrontendCode.Close) return this.send(pooling.statements.close(backend, frame), frame);
    if (code !== FrontendCode.Bind && code !== FrontendCode.Describe) return this.backend.toUpstream.add(frame);
    const used = pooling.statements.use(backend, code, frame);
    if (code === FrontendCode.Bind) {
      const portal = frame.toString('utf8', 5, frame.indexOf(0, 5));
      const effects = used.statement?.effects;
      if (effects !== undefined && effects.length > 0) this.portals.set(portal, { effects, text: used.statement!.text });
      else if (this.portals.size > 0) this.portals.delete(portal);
    }
    this.send(used.sent, frame);
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
    this.readingBatch = undefined;
    this.discarding = false;
    if (this.portals.size > 0) this.portals.clear();
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
    wireBytesOut.value += chunk.length;
    this.meter.bytesOut += chunk.length;
    try {
      const link = this.backend.link!;
      link.session.reader.push(chunk, this.answers.frame);
      this.toClient.flush();
      this.backpressure.check(link.session.socket);
      if (this.backend.link !== undefined && this.answers.length === 0) this.maybeRelease();
    } catch (err: unknown) {
      this.fatal(err);
    }
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

  private apply(changes: readonly SessionChange[]): void {
    for (const c of changes) {
      const searchPath = c.kind === 'search_path' ? c.value : (this.session.defaultSearchPath ?? ['$user', 'public']);
      this.session = { ...this.session, searchPath };
    }
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

  /** Pooling: the client's state on a backend could not be restored or learnt: it cannot go on safely. */
  lost(message: string): void {
    this.deps.log.warn({ message }, 'wire client ended: its session state was lost');
    this.terminate(new PgError(SqlState.ConnectionFailure, message, { hint: 'reconnect' }));
  }

  /**
   * Detaches from both sockets. The backend is reusable only if nothing is in flight; a statement
   * still running is cancelled (nobody is left to read its answer) and the backend closed, so it
   * is released at once whatever the client left behind. With `settleUpstream` (the client was
   * closed at the send timeout) the backend is settled and reused instead.
   */
  private end(clientLeft: boolean, settleUpstream = false): void {
    if (this.finished) return;
    this.finished = true;
    this.gate?.close(this.blocking);
    this.meter.close();
    this.toClient.flush();
    this.client.off('data', this.onClientData);
    this.backlog.length = 0;
    if (!this.client.destroyed) this.client.end();
    this.backpressure.stop();
    this.backend.finished = true;
    const link = this.backend.detach();
    this.onEnd();
    if (link === undefined) return;
    const upstream = link.session;
    // Held for a slow client (see Backpressure): whoever takes the session next, in this tick, reads it again.
    if (this.backpressure.holding) upstream.socket.resume();
    const alive = !upstream.socket.destroyed;
    const owed = this.answers.owed;
    if (settleUpstream && alive && !this.blocked && !this.upstreamFatal && owed > 0) {
      // Closed at the send timeout with work in flight: the session is brought back to idle and
      // reused (closed if a transaction is open). A client that leaves by itself has its session
      // closed at once instead, which frees its place in the pool soonest.
      void settle(upstream, owed, this.batch !== undefined).then((ok) => this.backend.giveBack(link, this.returnHow(link, ok, true)));
      return;
    }
    if (alive && owed > 0) void cancelUpstream(upstream);
    const clean = clientLeft && alive && owed === 0 && !this.blocked && this.answers.status === 'I';
    this.backend.giveBack(link, this.returnHow(link, clean));
  }

  private returnHow(link: Link, clean: boolean, unread = false): Return {
    if (this.pooling === undefined || link.backend === undefined) return clean ? 'keep' : 'close';
    return this.pooling.returnHow(link.backend, clean, unread);
  }
}
