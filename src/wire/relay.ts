/**
 * The relay between one authenticated client and its upstream session. Frames go through as
 * their original bytes — consecutive frames of one chunk in a single write — except `Query` and
 * `Parse`, whose SQL the policy decides first.
 *
 * Response order: the client must see answers in the order it sent its requests, also when it
 * pipelines. `queue` holds one entry per request awaiting an answer: `upstream` entries complete
 * with the upstream's ReadyForQuery, `local` entries are answers the proxy makes itself (a
 * denial) and are written as soon as every entry before them has completed.
 */
import type { Socket } from 'node:net';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import { misread, type Decision, type Policy, type Session, type SessionChange } from '../policy/index.js';
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
  decodeParse,
  decodeQuery,
  type FrameReader,
  type ParseMessage,
  type TransactionStatus,
} from '../protocol/index.js';
import type { Frame } from './frame-queue.js';
import { Run } from './run.js';
import { noteParameterStatus, type UpstreamSession } from '../upstream/session.js';

/** Stands in for the upstream before the session is attached; nothing is ever added to it. */
const NO_UPSTREAM = new Run(undefined);

const NO_CHANGES: readonly SessionChange[] = [];

interface Pending {
  /** Frames the proxy adds right before the ReadyForQuery that completes this entry. */
  before?: Buffer;
  changes: readonly SessionChange[];
  failed: boolean;
}

type Entry = { kind: 'upstream'; p: Pending } | { kind: 'local'; frames: Buffer[] };

export interface RelayDeps {
  policy: Policy;
  control: ControlPlane;
  log: Logger;
}

export class Relay {
  private readonly queue: Entry[] = [];
  private status: TransactionStatus = 'I';
  private readonly toClient: Run;
  // Extended protocol: state of the batch since the last Sync.
  private batchForwarded = false;
  private batchChanges: SessionChange[] | undefined; // allocated only when a statement changes the session
  private discarding = false;
  private deniedError: Buffer | undefined;
  // A decision in flight (large statement parsed off-thread, or a handled statement).
  private blocked = false;
  private readonly backlog: Frame[] = [];
  private finished = false;
  private upstreamFatal = false;
  private upstream: UpstreamSession | undefined;
  private toUpstream: Run = NO_UPSTREAM;

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
  }

  get transactionStatus(): TransactionStatus {
    return this.status;
  }

  // ── client → upstream ───────────────────────────────────────────────────────────────

  private readonly onClientData = (chunk: Buffer): void => {
    try {
      this.clientReader.push(chunk, this.onClientFrame);
      this.toUpstream.flush();
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  private readonly onClientFrame = (code: number, frame: Buffer): void => {
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
        return this.answer(new PgError(SqlState.FeatureNotSupported, 'the function call protocol message is not supported', { hint: 'call the function in a SELECT' }));
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
    return rights ? this.deps.policy.decide(sql, rights, this.session) : this.deps.control.rights(this.principal.user).then((r) => this.deps.policy.decide(sql, r, this.session));
  }

  private block(work: Promise<void>): void {
    this.blocked = true;
    this.client.pause();
    work
      .catch((err: unknown) => this.answer(this.toClientError(err)))
      .then(() => {
        this.blocked = false;
        while (!this.blocked && this.backlog.length > 0) {
          const f = this.backlog.shift()!;
          this.onClientFrame(f.code, f.frame);
        }
        this.toUpstream.flush();
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
      return this.answer(this.statementError(err)); // invalid UTF-8 (22021): a statement error, as in Postgres
    }
    const d = this.decide(sql);
    if (d instanceof Promise) return this.block(d.then((decided) => this.applyQuery(frame, decided)));
    this.applyQuery(frame, d);
  }

  private applyQuery(frame: Buffer, d: Decision): void {
    switch (d.kind) {
      case 'allow':
        this.toUpstream.add(frame);
        return this.expectUpstream({ changes: d.changes, failed: false });
      case 'rewrite':
        this.toUpstream.write(buildQuery(d.sql));
        return this.expectUpstream({ changes: d.changes, failed: false });
      case 'deny':
        return this.answer(d.error);
      case 'handled':
        return this.block(this.handle(d));
    }
  }

  private async handle(d: Extract<Decision, { kind: 'handled' }>): Promise<void> {
    if (this.status !== 'I') {
      return this.answer(new PgError('25001', `${d.commandTag} of a repo cannot run inside a transaction block`, { hint: 'creating and dropping repos takes effect at once; run it outside BEGIN … COMMIT' }));
    }
    const { action } = d;
    const ref = { owner: action.owner, repo: action.repo };
    try {
      if (action.kind === 'create_repo') await this.deps.control.createRepo(ref);
      else await this.deps.control.deleteRepo(ref);
    } catch (err: unknown) {
      const skip = err instanceof PgError && ((action.kind === 'create_repo' && action.ifNotExists && err.code === SqlState.DuplicateSchema) || (action.kind === 'drop_repo' && action.ifExists && err.code === SqlState.InvalidSchemaName));
      if (!skip) throw err;
    }
    this.respond([buildCommandComplete(d.commandTag)]);
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
    if (d instanceof Promise) return this.block(d.then((decided) => this.applyParse(frame, parse, decided)));
    this.applyParse(frame, parse, d);
  }

  private applyParse(frame: Buffer, parse: ParseMessage, d: Decision): void {
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
        return this.denyBatch(d.error);
      case 'handled':
        return this.denyBatch(
          new PgError(SqlState.FeatureNotSupported, `${d.commandTag} of a repo needs the simple query protocol`, {
            hint: "send it without parameters (psql, or a driver's simple query), or use POST /api/v1beta/repos/",
          }),
        );
    }
  }

  /** A denied Parse: Postgres' own behaviour — an error, then everything up to Sync is ignored. */
  private denyBatch(error: PgError): void {
    this.discarding = true;
    const frame = buildErrorResponse(error);
    if (!this.batchForwarded && this.queue.length === 0) {
      this.toClient.write(frame); // nothing before it is outstanding: tell the client at once
    } else {
      this.deniedError = frame;
    }
  }

  private onSync(frame: Buffer): void {
    if (!this.discarding) {
      this.toUpstream.add(frame);
      this.expectUpstream({ changes: this.batchChanges ?? NO_CHANGES, failed: false });
    } else if (this.batchForwarded) {
      // Earlier messages of this batch went upstream: their answers come first, then the denial.
      this.toUpstream.add(frame);
      this.expectUpstream({ changes: [], failed: false, ...(this.deniedError && { before: this.deniedError }) });
    } else {
      this.respond(this.deniedError ? [this.deniedError] : []);
    }
    this.discarding = false;
    this.deniedError = undefined;
    this.batchForwarded = false;
    this.batchChanges = undefined;
  }

  private expectUpstream(p: Pending): void {
    this.queue.push({ kind: 'upstream', p });
  }

  /** An error answered by the proxy itself, ending with ReadyForQuery. */
  private answer(error: PgError): void {
    this.respond([buildErrorResponse(error)]);
  }

  /** Frames plus ReadyForQuery, in their place in the response order. */
  private respond(frames: Buffer[]): void {
    if (this.queue.length === 0) {
      this.toClient.flush();
      for (const f of frames) this.toClient.write(f);
      this.toClient.write(buildReadyForQuery(this.status));
    } else {
      this.queue.push({ kind: 'local', frames });
    }
  }

  // ── upstream → client ───────────────────────────────────────────────────────────────

  private readonly onUpstreamData = (chunk: Buffer): void => {
    try {
      this.upstream!.reader.push(chunk, this.onUpstreamFrame);
      this.toClient.flush();
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  private readonly onUpstreamFrame = (code: number, frame: Buffer): void => {
    if (code === BackendCode.ReadyForQuery) return this.onReady(frame);
    if (code === BackendCode.ParameterStatus) noteParameterStatus(this.upstream!, frame);
    if (code === BackendCode.ErrorResponse) {
      const head = this.queue[0];
      if (head?.kind === 'upstream') head.p.failed = true;
      if (frame.includes('SFATAL')) this.upstreamFatal = true;
    }
    this.toClient.add(frame);
  };

  private onReady(frame: Buffer): void {
    this.status = String.fromCharCode(frame[5]!) as TransactionStatus;
    this.upstream!.status = this.status;
    const head = this.queue.shift();
    if (head?.kind === 'upstream') {
      if (head.p.before && !head.p.failed) this.toClient.write(head.p.before);
      if (!head.p.failed) this.apply(head.p.changes);
    }
    this.toClient.add(frame);
    while (this.queue[0]?.kind === 'local') {
      const local = this.queue.shift() as Extract<Entry, { kind: 'local' }>;
      for (const f of local.frames) this.toClient.write(f);
      this.toClient.write(buildReadyForQuery(this.status));
    }
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
    if (!this.client.destroyed) this.client.end(buildErrorResponse(e, 'FATAL'));
    this.end(false);
  }

  private readonly onClientClose = (): void => this.end(true);

  private readonly onUpstreamClose = (): void => {
    if (!this.upstreamFatal && !this.client.destroyed) {
      this.toClient.flush();
      this.client.write(buildErrorResponse(new PgError(SqlState.ConnectionFailure, 'the upstream connection was lost', { hint: 'reconnect; other sessions are not affected' }), 'FATAL'));
    }
    this.toClient.flush();
    this.client.end();
    this.end(false);
  };

  /** Detaches from both sockets; the upstream session is reusable only if nothing is in flight. */
  private end(clientLeft: boolean): void {
    if (this.finished) return;
    this.finished = true;
    this.toClient.flush();
    this.client.off('data', this.onClientData);
    this.upstream?.socket.off('data', this.onUpstreamData);
    this.upstream?.socket.off('close', this.onUpstreamClose);
    if (!this.client.destroyed) this.client.end();
    const clean = clientLeft && this.queue.length === 0 && !this.blocked && this.status === 'I' && this.upstream?.socket.destroyed === false;
    this.onEnd(this.upstream, clean);
  }
}
