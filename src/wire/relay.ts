/**
 * The relay between one authenticated client and its upstream session. Frames go through as
 * their original bytes — consecutive frames of one chunk in a single write — except `Query` and
 * `Parse`, whose SQL the policy decides first.
 *
 * Response order: the client must see answers in the order it sent its requests, also when it
 * pipelines. `queue` holds one entry per request awaiting an answer: `upstream` entries complete
 * with the upstream's ReadyForQuery, `local` entries are answers the proxy makes itself and are
 * written as soon as every entry before them has completed.
 *
 * A statement the proxy refuses must fail the transaction as an error from Postgres would
 * (ReadyForQuery `E`, 25P02 after it, COMMIT answered ROLLBACK, savepoints, the implicit
 * transaction of an extended-protocol batch rolled back). Unless nothing is in flight and no
 * transaction is open — then the refusal is answered at once — the upstream runs a stand-in in
 * the refused statement's place that fails the same way, and the proxy's error replaces the
 * stand-in's in the answers.
 */
import type { Socket } from 'node:net';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import { performHandled } from '../control/handled.js';
import { errorInOriginal, misread, type Decision, type Policy, type Session, type SessionChange } from '../policy/index.js';
import { PgError, SqlState, internalError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import {
  BackendCode,
  FrontendCode,
  buildCommandComplete,
  buildErrorResponse,
  buildParse,
  buildQuery,
  buildReadyForQuery,
  decodeErrorResponse,
  decodeParse,
  decodeQuery,
  type FrameReader,
  type ParseMessage,
  type TransactionStatus,
} from '../protocol/index.js';
import type { Frame } from './frame-queue.js';
import { notificationForClient } from './notifications.js';
import { Run } from './run.js';
import { cancelUpstream, noteParameterStatus, settle, watchSilence, type UpstreamSession } from '../upstream/session.js';
import { isDdlTag, type AuditEvent, type AuditOrigin } from '../control/audit.js';
import { AUDIT_SQL_MAX_CHARS } from '../control/audit-text.js';
import type { UsageMeter } from '../control/usage.js';
import { countError, decisions, wireBytesIn, wireBytesOut, type ErrorOrigin } from '../observe/metrics.js';

/**
 * Bytes written to the client and not yet taken by it past which the upstream is paused
 * (backpressure): what one slow client costs the proxy stays about this, whatever it asked for.
 */
const CLIENT_HIGH_WATER = 1 << 20;
const DEFAULT_SEND_TIMEOUT_MS = 30_000;

/** Stands in for the upstream before the session is attached; nothing is ever added to it. */
const NO_UPSTREAM = new Run(undefined);

const NO_CHANGES: readonly SessionChange[] = [];

/** Named in every stand-in, so the upstream's error for one is known (and its log says why). */
const STAND_IN = 'statement refused by repobase';
const STAND_IN_BYTES = Buffer.from(STAND_IN);
/**
 * Errors Postgres reports while reading a statement, before it looks at the transaction: also in
 * a failed transaction. Their stand-in is itself unreadable. Every other refusal stands for an
 * error Postgres would report after that check, so its stand-in fails at name lookup, and in a
 * failed transaction the client gets Postgres' own 25P02, as it would without the proxy.
 */
const READING_ERRORS: ReadonlySet<string> = new Set([SqlState.SyntaxError, SqlState.CharacterNotInRepertoire, SqlState.ProgramLimitExceeded, SqlState.StatementTooComplex]);

/** SQL that fails upstream as `error` would have failed there. */
function standIn(error: PgError): string {
  return READING_ERRORS.has(error.code) ? `"${STAND_IN}"` : `SELECT FROM pg_catalog."${STAND_IN}"`;
}

interface Pending {
  changes: readonly SessionChange[];
  /** The SQL sent (the batch's Parse texts for the extended protocol): the text of DDL in the audit log. */
  sql?: string | undefined;
  failed: boolean;
  /** The proxy's ErrorResponse for a refused statement, in place of its stand-in's. */
  refusal: Buffer | undefined;
  /** A rewritten Query: the text sent and what the rewrites changed, to count error positions in the client's text. */
  rewritten?: { sent: string; edits: Extract<Decision, { kind: 'rewrite' }>['edits'] };
}

type Entry = { kind: 'upstream'; p: Pending } | { kind: 'local'; frames: Buffer[] };

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
}

/** Backend messages the usage meter looks at: statement ends, and what says rows are coming. */
const METERED = new Uint8Array(256);
for (const code of [BackendCode.CommandComplete, BackendCode.RowDescription, BackendCode.CopyOutResponse, BackendCode.NoData, BackendCode.ErrorResponse]) METERED[code] = 1;

/** The row count at the end of a CommandComplete's tag (`SELECT 7`, `FETCH 2`, `COPY 10`). */
function tagCount(frame: Buffer): number {
  let n = 0;
  let scale = 1;
  for (let i = frame.length - 2; i > 5; i--) {
    const c = frame[i]!;
    if (c < 0x30 || c > 0x39) break;
    n += (c - 0x30) * scale;
    scale *= 10;
  }
  return n;
}

export class Relay {
  private readonly queue: Entry[] = [];
  private status: TransactionStatus = 'I';
  private readonly toClient: Run;
  // Extended protocol: state of the batch since the last Sync.
  private batchForwarded = false;
  private batchChanges: SessionChange[] | undefined; // allocated only when a statement changes the session
  private discarding = false;
  private batchRefusal: Buffer | undefined;
  // A decision in flight (large statement parsed off-thread, or a handled statement).
  private blocked = false;
  private readonly backlog: Frame[] = [];
  private finished = false;
  private upstreamFatal = false;
  private upstream: UpstreamSession | undefined;
  private toUpstream: Run = NO_UPSTREAM;
  /** Resolves when every request sent upstream has been answered. */
  private onDrained: (() => void) | undefined;
  /** Running while the upstream is paused for a client that does not read (see `holdUpstream`). */
  private sendTimer: NodeJS.Timeout | undefined;
  private unwatch: () => void = () => undefined;
  /** Set by `closeWhenIdle`: the FATAL to end the session with once no transaction is open. */
  private closing: PgError | undefined;
  /** This connection's usage since the last write (see control/usage.ts). */
  private readonly meter: UsageMeter;
  /** A RowDescription or CopyOutResponse came: the next CommandComplete counts rows returned. */
  private rowsFollow = false;
  private batchSql: string | undefined;

  /**
   * @param acquire takes the upstream session, on the client's first message (so idle clients
   *   hold no upstream connection)
   * @param onEnd receives the session (if any) and whether it can be reused
   */
  constructor(
    private readonly client: Socket,
    private readonly clientReader: FrameReader,
    private readonly acquire: () => Promise<UpstreamSession>,
    private readonly principal: Principal,
    private session: Session,
    private readonly deps: RelayDeps,
    private readonly onEnd: (upstream: UpstreamSession | undefined, clean: boolean) => void,
  ) {
    this.toClient = new Run(client);
    this.meter = deps.control.usage.meter(principal.user);
  }

  /** Takes over the client socket; `early` are client frames that arrived during start-up. */
  start(early: Frame[]): void {
    this.client.on('data', this.onClientData);
    this.client.on('close', this.onClientClose);
    this.client.on('error', this.onClientClose);
    for (const f of early) this.onClientFrame(f.code, f.frame);
    this.toUpstream.flush();
  }

  /** The upstream session, once there is one (cancel requests go to it). */
  get currentUpstream(): UpstreamSession | undefined {
    return this.upstream;
  }

  private attach(upstream: UpstreamSession): void {
    if (this.finished) return this.onEnd(upstream, upstream.status === 'I'); // the client left while we waited
    this.upstream = upstream;
    this.toUpstream = new Run(upstream.socket);
    upstream.socket.on('data', this.onUpstreamData);
    upstream.socket.on('close', this.onUpstreamClose);
    this.unwatch = watchSilence(upstream.socket, this.deps.responseTimeoutMs ?? 0, () => this.queue.length > 0, this.onUpstreamSilent);
  }

  get transactionStatus(): TransactionStatus {
    return this.status;
  }

  /** Whether a request of the client is in flight (sent upstream, or being decided or handled). */
  get busy(): boolean {
    return this.queue.length > 0 || this.blocked;
  }

  /**
   * Ends the session with `error` (as FATAL) once no transaction is open and nothing is in
   * flight: at once if that is so now, else right after the ReadyForQuery 'I' that ends it.
   */
  closeWhenIdle(error: PgError): void {
    this.closing = error;
    this.closeIfIdle();
  }

  /** Ends the session now with `error` (as FATAL); an open transaction is rolled back, as its upstream session is closed. */
  terminate(error: PgError): void {
    if (this.finished) return;
    this.toClient.flush();
    if (!this.client.destroyed) this.client.end(buildErrorResponse(error, 'FATAL'));
    this.end(false);
  }

  private closeIfIdle(): void {
    if (this.closing && this.queue.length === 0 && this.status === 'I' && !this.blocked) this.terminate(this.closing);
  }

  // ── client → upstream ───────────────────────────────────────────────────────────────

  private readonly onClientData = (chunk: Buffer): void => {
    wireBytesIn.value += chunk.length;
    this.meter.bytesIn += chunk.length;
    try {
      this.clientReader.push(chunk, this.onClientFrame);
      this.toUpstream.flush();
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
    if (!this.upstream && code !== FrontendCode.Terminate) {
      this.backlog.push({ code, frame });
      this.block(
        this.acquire().then(
          (s) => this.attach(s),
          (err: unknown) => this.fatal(err),
        ),
      );
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
        return this.refuse(new PgError(SqlState.FeatureNotSupported, 'the function call protocol message is not supported', { hint: 'call the function in a SELECT' }));
      case FrontendCode.Terminate:
        return this.end(true);
      case FrontendCode.CopyData:
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        return this.toUpstream.add(frame);
      default:
        // Bind, Describe, Execute, Close, Flush: part of an extended-protocol batch.
        if (this.discarding) return;
        this.batchForwarded = true;
        this.toUpstream.add(frame);
    }
  };

  /** The decision on `sql`: at once on the hot path (rights and analysis cached), else a Promise the stream blocks on. */
  private decide(sql: string): Decision | Promise<Decision> {
    const misreading = this.upstream?.readingChanged ? misread(sql, this.upstream.reading) : undefined;
    if (misreading) return misreading;
    const rights = this.deps.control.peekRights(this.principal.user);
    const d = rights ? this.deps.policy.decide(sql, rights, this.session) : this.deps.control.rights(this.principal.user).then((r) => this.deps.policy.decide(sql, r, this.session));
    return d instanceof Promise ? d.then(this.noteListens) : this.noteListens(d);
  }

  /** Channels LISTENed to by their "<user>/…" name, shown by it (see notifications.ts). */
  private readonly listenedAs = new Set<string>();
  private readonly noteListens = (d: Decision): Decision => {
    if ((d.kind === 'allow' || d.kind === 'rewrite') && d.listens !== undefined) for (const c of d.listens) this.listenedAs.add(c);
    return d;
  };

  /** Holds the client's frames back until `work` is done (they wait in `backlog`). */
  private block(work: Promise<void>): void {
    this.blocked = true;
    this.client.pause();
    work
      .catch((err: unknown) => this.finished || this.refuse(this.toClientError(err)))
      .then(() => {
        if (this.finished) return; // the client left: what it sent after is not run
        this.blocked = false;
        while (!this.blocked && this.backlog.length > 0) {
          const f = this.backlog.shift()!;
          this.onClientFrame(f.code, f.frame);
        }
        this.toUpstream.flush();
        if (this.closing) this.closeIfIdle();
        if (!this.blocked && !this.finished) this.client.resume();
      })
      .catch((err: unknown) => this.fatal(err));
  }

  private onQuery(frame: Buffer): void {
    if (this.discarding) return; // as Postgres: after an error in a batch, everything up to Sync is ignored
    let sql: string;
    try {
      sql = decodeQuery(frame);
    } catch (err: unknown) {
      return this.refuse(this.statementError(err)); // invalid UTF-8 (22021): a statement error, as in Postgres
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
    decisions.wire[d.kind].value++;
    switch (d.kind) {
      case 'allow':
        this.toUpstream.add(frame);
        return this.expectUpstream({ changes: d.changes, failed: false, refusal: undefined, sql });
      case 'rewrite':
        this.toUpstream.write(buildQuery(d.sql));
        return this.expectUpstream({ changes: d.changes, failed: false, refusal: undefined, sql, rewritten: { sent: d.sql, edits: d.edits } });
      case 'deny':
        this.audit({ action: 'statement_denied', sql, sqlstate: d.error.code });
        return this.refuse(d.error, d.refusedAt === undefined ? '' : sql.slice(0, d.refusedAt), 'policy');
      case 'handled':
        return this.block(this.handle(d, sql));
    }
  }

  private async handle(d: Extract<Decision, { kind: 'handled' }>, sql: string): Promise<void> {
    await this.drained(); // the transaction status is known once everything before has been answered
    const what = d.commandTags[0] ?? '';
    if (this.status !== 'I') {
      return this.refuse(new PgError('25001', `${what} of a repo cannot run inside a transaction block`, { hint: 'repos and their sharing change at once; run it outside BEGIN … COMMIT' }));
    }
    for (const change of await performHandled(this.deps.control, this.principal.user, d.action)) this.audit({ ...change, sql });
    this.meter.statements += d.commandTags.length;
    this.respond(d.commandTags.map((tag) => buildCommandComplete(tag)));
  }

  private onParse(frame: Buffer): void {
    if (this.discarding) return;
    let parse: ParseMessage;
    try {
      parse = decodeParse(frame);
    } catch (err: unknown) {
      return this.denyBatch(this.statementError(err));
    }
    const d = this.decide(parse.sql);
    if (d instanceof Promise) return this.later(d, (decided) => this.applyParse(frame, parse, decided));
    this.applyParse(frame, parse, d);
  }

  private applyParse(frame: Buffer, parse: ParseMessage, d: Decision): void {
    decisions.wire[d.kind].value++;
    if ((this.batchSql?.length ?? 0) < AUDIT_SQL_MAX_CHARS) this.batchSql = this.batchSql === undefined ? parse.sql : `${this.batchSql}\n${parse.sql}`;
    switch (d.kind) {
      case 'allow':
        this.batchForwarded = true;
        if (d.changes.length) (this.batchChanges ??= []).push(...d.changes);
        return this.toUpstream.add(frame);
      case 'rewrite':
        this.batchForwarded = true;
        if (d.changes.length) (this.batchChanges ??= []).push(...d.changes);
        return this.toUpstream.write(buildParse(parse.name, d.sql, parse.paramTypes));
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

  /**
   * A refused Parse: Postgres' own behaviour — an error, then everything up to Sync is ignored.
   * When the batch may run in a transaction (one is open, or statements of the batch or before it
   * went upstream), the stand-in Parse, under the client's statement name, fails it upstream.
   */
  private denyBatch(error: PgError, name = '', origin: ErrorOrigin = 'proxy'): void {
    countError('wire', origin, error.code);
    this.discarding = true;
    const frame = buildErrorResponse(error);
    if (!this.batchForwarded && this.queue.length === 0 && this.status === 'I') {
      this.toClient.write(frame); // nothing to fail and nothing outstanding: tell the client at once
      return;
    }
    this.toUpstream.write(buildParse(name, standIn(error)));
    this.batchForwarded = true;
    this.batchRefusal = frame;
  }

  private onSync(frame: Buffer): void {
    if (this.discarding && !this.batchForwarded) {
      this.respond([]); // refused at once, nothing went upstream
    } else {
      this.toUpstream.add(frame);
      this.expectUpstream({ changes: this.discarding ? NO_CHANGES : (this.batchChanges ?? NO_CHANGES), failed: false, refusal: this.batchRefusal, sql: this.batchSql });
    }
    this.batchSql = undefined;
    this.discarding = false;
    this.batchRefusal = undefined;
    this.batchForwarded = false;
    this.batchChanges = undefined;
  }

  private expectUpstream(p: Pending): void {
    this.queue.push({ kind: 'upstream', p });
  }

  /**
   * A statement (simple protocol) the proxy refuses. With no transaction open and nothing in
   * flight the error is answered at once; otherwise the upstream runs `ahead` (the statements of
   * the string Postgres would run before the refused one) and a stand-in that fails in its place.
   */
  private refuse(error: PgError, ahead = '', origin: ErrorOrigin = 'proxy'): void {
    countError('wire', origin, error.code);
    const frame = buildErrorResponse(error);
    if ((ahead === '' && this.queue.length === 0 && this.status === 'I') || !this.upstream) return this.respond([frame]);
    this.toUpstream.write(buildQuery(ahead + standIn(error)));
    this.expectUpstream({ changes: NO_CHANGES, failed: false, refusal: frame });
  }

  /** Resolves once every request sent upstream has been answered. */
  private drained(): Promise<void> {
    if (this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => (this.onDrained = resolve));
  }

  /** Frames plus ReadyForQuery, in their place in the response order. */
  private respond(frames: Buffer[]): void {
    if (this.queue.length === 0) {
      this.toClient.flush();
      for (const f of frames) this.toClient.write(f);
      this.toClient.write(buildReadyForQuery(this.status));
      if (this.closing) this.closeIfIdle();
    } else {
      this.queue.push({ kind: 'local', frames });
    }
  }

  // ── upstream → client ───────────────────────────────────────────────────────────────

  private readonly onUpstreamData = (chunk: Buffer): void => {
    wireBytesOut.value += chunk.length;
    this.meter.bytesOut += chunk.length;
    try {
      this.upstream!.reader.push(chunk, this.onUpstreamFrame);
      this.toClient.flush();
      if (this.client.writableLength > CLIENT_HIGH_WATER) this.holdUpstream();
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  /**
   * Backpressure: the client reads slower than the upstream answers. The upstream socket is
   * paused — Postgres then blocks on its send, and memory here stays bounded — until the client
   * has taken what was written. A client that takes nothing for `sendTimeoutMs` is closed; its
   * upstream session is settled (statement cancelled, transaction rolled back) and reused.
   */
  private holdUpstream(): void {
    if (this.sendTimer || !this.upstream) return;
    const socket = this.upstream.socket;
    const ms = this.deps.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
    socket.pause();
    let left = this.client.writableLength;
    const check = () => {
      if (this.finished) return;
      if (this.client.writableLength < left) {
        left = this.client.writableLength; // slow, but reading
        this.sendTimer = setTimeout(check, ms);
        return;
      }
      this.deps.log.info({ pending: left, ms }, 'wire client read nothing of its answer within the send timeout: closed');
      this.client.destroy();
      this.end(true, true);
    };
    this.sendTimer = setTimeout(check, ms);
    this.client.once('drain', () => {
      clearTimeout(this.sendTimer);
      this.sendTimer = undefined;
      if (!this.finished) socket.resume();
    });
  }

  /** The upstream owes an answer and passed nothing for `responseTimeoutMs`: a network that stopped answering. */
  private readonly onUpstreamSilent = (): void => {
    const ms = this.deps.responseTimeoutMs;
    this.deps.log.warn({ ms }, 'upstream session silent past the response timeout: closed');
    this.terminate(new PgError(SqlState.ConnectionFailure, `the upstream connection did not answer within ${ms} ms`, { hint: 'Postgres or the network to it stopped answering; reconnect (other sessions are not affected)' }));
  };

  private readonly onUpstreamFrame = (code: number, frame: Buffer): void => {
    if (METERED[code] === 1) this.meterFrame(code, frame);
    if (code === BackendCode.ReadyForQuery) return this.onReady(frame);
    if (code === BackendCode.NotificationResponse) frame = notificationForClient(frame, this.principal.user, this.listenedAs);
    if (code === BackendCode.ParameterStatus) noteParameterStatus(this.upstream!, frame);
    if (code === BackendCode.ErrorResponse) {
      const head = this.queue[0];
      if (head?.kind === 'upstream') {
        head.p.failed = true;
        if (head.p.refusal !== undefined && frame.includes(STAND_IN_BYTES)) {
          this.toClient.write(head.p.refusal);
          head.p.refusal = undefined;
          return;
        }
      }
      const error = decodeErrorResponse(frame);
      countError('wire', 'upstream', error.code);
      if (frame.includes('SFATAL')) this.upstreamFatal = true;
      const sql = head?.kind === 'upstream' ? head.p.sql : undefined;
      const explained = sql === undefined ? undefined : this.deps.control.explainErrorNow(error, sql);
      const rewritten = head?.kind === 'upstream' ? head.p.rewritten : undefined;
      if (explained) frame = buildErrorResponse(explained);
      else if (rewritten !== undefined && sql !== undefined && error.position !== undefined) frame = buildErrorResponse(errorInOriginal(error, rewritten.sent, sql, rewritten.edits));
    }
    this.toClient.add(frame);
  };

  private onReady(frame: Buffer): void {
    this.status = String.fromCharCode(frame[5]!) as TransactionStatus;
    this.upstream!.status = this.status;
    const head = this.queue.shift();
    if (head?.kind === 'upstream' && !head.p.failed) this.apply(head.p.changes);
    this.toClient.add(frame);
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
    if (this.closing) this.closeIfIdle();
  }

  /** Usage and the DDL audit from the upstream's answers: a CommandComplete's tag says how many rows a SELECT or FETCH returned and what ran. */
  private meterFrame(code: number, frame: Buffer): void {
    if (code !== BackendCode.CommandComplete) {
      this.rowsFollow = code === BackendCode.RowDescription || code === BackendCode.CopyOutResponse;
      return;
    }
    this.meter.statements++;
    if (this.rowsFollow) this.meter.rowsReturned += tagCount(frame);
    this.rowsFollow = false;
    // The hot tags (SELECT, INSERT, UPDATE, FETCH) are told apart by their first bytes, undecoded.
    const first = frame[5];
    if (first === 0x49 || first === 0x55 || first === 0x46 || (first === 0x53 && frame[7] === 0x4c)) return;
    const tag = frame.toString('latin1', 5, frame.length - 1);
    if (!isDdlTag(tag)) return;
    const head = this.queue[0];
    this.audit({ action: 'ddl', target: tag.replace(/ \d+$/, ''), sql: head?.kind === 'upstream' ? head.p.sql : undefined });
  }

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
    if (!this.client.destroyed) this.client.end(buildErrorResponse(e, 'FATAL'));
    this.end(false);
  }

  private readonly onClientClose = (): void => this.end(true);

  private readonly onUpstreamClose = (): void => {
    if (!this.upstreamFatal && !this.client.destroyed) {
      countError('wire', 'upstream', SqlState.ConnectionFailure);
      this.toClient.flush();
      this.client.write(buildErrorResponse(new PgError(SqlState.ConnectionFailure, 'the upstream connection was lost', { hint: 'reconnect; other sessions are not affected' }), 'FATAL'));
    }
    this.toClient.flush();
    this.client.end();
    this.end(false);
  };

  /**
   * Detaches from both sockets. The upstream session is reusable only if nothing is in flight;
   * a statement still running is cancelled (nobody is left to read its answer) and the session
   * closed, so it is released at once whatever the client left behind. With `settleUpstream`
   * (the client was closed at the send timeout) the session is settled and reused instead.
   */
  private end(clientLeft: boolean, settleUpstream = false): void {
    if (this.finished) return;
    this.finished = true;
    this.meter.close();
    this.toClient.flush();
    this.client.off('data', this.onClientData);
    this.backlog.length = 0;
    const upstream = this.upstream;
    upstream?.socket.off('data', this.onUpstreamData);
    upstream?.socket.off('close', this.onUpstreamClose);
    if (!this.client.destroyed) this.client.end();
    clearTimeout(this.sendTimer);
    // Held for a slow client (see holdUpstream): whoever takes the session next, in this tick, reads it again.
    if (this.sendTimer !== undefined) upstream?.socket.resume();
    this.unwatch();
    const alive = upstream !== undefined && !upstream.socket.destroyed;
    if (settleUpstream && alive && !this.blocked && !this.upstreamFatal && this.queue.length > 0) {
      // Closed at the send timeout with work in flight: the session is brought back to idle and
      // reused (closed if a transaction is open). A client that leaves by itself has its session
      // closed at once instead, which frees its place in the pool soonest.
      const owed = this.queue.reduce((n, e) => n + (e.kind === 'upstream' ? 1 : 0), 0);
      void settle(upstream, owed, this.batchForwarded).then((ok) => this.onEnd(upstream, ok));
      return;
    }
    if (alive && this.queue.length > 0) void cancelUpstream(upstream);
    const clean = clientLeft && alive && this.queue.length === 0 && !this.blocked && this.status === 'I';
    this.onEnd(upstream, clean);
  }
}
