/**
 * The relay between one authenticated client and the upstream backend serving it: the client's
 * side (relay-core.ts is the backend's). Frames go through as their original bytes — consecutive
 * frames of one chunk in a single write — except `Query` and `Parse`, whose SQL the policy decides
 * first, and, when pooling by transaction, the prepared-statement names the proxy maps
 * (prepared.ts). The answers come back through answers.ts, in the order the client sent its
 * requests.
 *
 * Backends: in session mode the client takes one at its first request and keeps it; pooling by
 * transaction (`pooling.ts`), it holds one from the first message that needs one until the
 * ReadyForQuery 'I' that ends its transaction (an extended batch until its Sync, a COPY until it
 * ends), unless its session state pins it there. Refusals follow stand-in.ts.
 */
import type { Decision, SessionEffect } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import { FrontendCode, buildErrorResponse, buildParse, buildQuery, decodeParse, decodeQuery, fromClientText, inClientText, type ClientText, type ParseMessage } from '../protocol/index.js';
import { AUDIT_SQL_MAX_CHARS } from '../control/audit-text.js';
import { countError, decisions, wireBytesIn, type ErrorOrigin } from '../observe/metrics.js';
import type { Prepared } from './prepared-statement.js';
import type { Pooling } from './pooling.js';
import { restoresAfterResets } from './reset-restore.js';
import { splicedQuery } from './query-splices.js';
import type { Sent } from './prepared.js';
import { standIn } from './stand-in.js';
import { noEffects, pending, type Pending, type Step } from './requests.js';
import { runHandled } from './handled.js';
import { checkFunctionCall } from './large-objects.js';
import { ClientReading } from './reading.js';
import { NO_CHANGES, RelayCore } from './relay-core.js';

export type { RelayDeps } from './relay-deps.js';

/** A Parse up to this size is remembered, to be recognised when it comes again (see `decodeParse`). */
const REMEMBERED_PARSE_BYTES = 4096;

export class Relay extends RelayCore {
  private lastParse: { bytes: Buffer; text: ClientText; parse: ParseMessage } | undefined;
  /** The policy's decisions, the client's recent statements remembered by shape. */
  private readonly decideStatement = this.deps.policy.forClient();

  // ── client → upstream ───────────────────────────────────────────────────────────────

  /** Pooling: the text to prepare a SQL PREPARE again from, as the policy lets it through now (undefined: refused, or not known at once). */
  prepareText(p: Prepared): string | undefined {
    const d = this.decide(p.sql);
    if (d instanceof Promise) return undefined;
    return d.kind === 'allow' ? p.sql : d.kind === 'rewrite' ? d.sql : undefined;
  }

  /** The decision on `sql`: at once on the hot path (rights and analysis cached), else a Promise the stream is held for. */
  private decide(sql: string): Decision | Promise<Decision> {
    const misreading = this.readings.misread(sql);
    if (misreading) return misreading;
    const session = this.readings.session(this.searchPath.session);
    const rights = this.deps.control.peekRights(this.principal);
    const { noteListens } = this.notifications;
    const d = rights ? this.decideStatement(sql, rights, session) : this.deps.control.rights(this.principal).then((r) => this.decideStatement(sql, r, session));
    return d instanceof Promise ? d.then(noteListens) : noteListens(d);
  }

  protected readonly onClientData = (chunk: Buffer): void => {
    wireBytesIn.value += chunk.length;
    this.meter.bytesIn += chunk.length;
    try {
      this.clientReader.push(chunk, this.onClientFrame);
      this.backend.toUpstream.flush();
      this.intake.check(this.backend.link?.session.socket);
      const wait = this.gate?.afterChunk(this.judged);
      if (wait !== undefined) this.hold.until(wait, undefined, true); // no more is read until there is room
    } catch (err: unknown) {
      this.fatal(err);
    }
  };

  protected readonly onClientFrame = (code: number, frame: Buffer): void => {
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
        if (!this.backend.takeNow() && !this.ready(FrontendCode.Query, frame, () => this.applyQuery(frame, sql, d))) return; // no closure made on the hot path
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
          // Steps only where a statement does something to the session (a step of none is a no-op).
          if (restores !== undefined || !noEffects(d.effects)) p.steps = d.effects?.map((effects): Step => ({ effects, text: sql }));
          if (restores !== undefined) for (const r of [...restores].reverse()) p.steps?.splice(r.statement + 1, 0, { effects: r.effects, text: undefined, hidden: true });
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
      parse = this.decodeParse(frame);
    } catch (err: unknown) {
      return this.denyBatch(this.statementError(err));
    }
    const d = this.decide(parse.sql);
    if (d instanceof Promise) return this.later(d, (decided) => this.applyParse(frame, parse, decided));
    this.applyParse(frame, parse, d);
  }

  /**
   * The Parse decoded — the same as the client's last one when its bytes are (drivers send one
   * unnamed Parse per statement, most often the text of the one before): its text is then the
   * same string, whose hash the policy's cache finds computed.
   */
  private decodeParse(frame: Buffer): ParseMessage {
    const text = this.readings.text();
    const last = this.lastParse;
    if (last !== undefined && last.text === text && last.bytes.length === frame.length && last.bytes.equals(frame)) return last.parse;
    const parse = decodeParse(fromClientText(frame, text));
    if (frame.length <= REMEMBERED_PARSE_BYTES) this.lastParse = { bytes: Buffer.from(frame), text, parse };
    return parse;
  }

  private applyParse(frame: Buffer, parse: ParseMessage, d: Decision): void {
    if ((d.kind === 'allow' || d.kind === 'rewrite') && !this.backend.takeNow() && !this.ready(FrontendCode.Parse, frame, () => this.applyParse(frame, parse, d))) return; // no closure made on the hot path
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
  protected refuse(error: PgError, ahead = '', origin: ErrorOrigin = 'proxy', frame?: Buffer): void {
    const answerNow = ahead === '' && ((this.answers.length === 0 && this.answers.status === 'I') || this.backend.link === undefined);
    if (!answerNow && frame !== undefined && !this.ready(FrontendCode.Query, frame)) return; // refused again once a backend serves the client
    countError('wire', origin, error.code);
    const errorFrame = this.inClientText(buildErrorResponse(error));
    if (answerNow || this.backend.link === undefined) return this.answers.respond([errorFrame]);
    this.backend.toUpstream.write(this.inClientText(buildQuery(ahead + standIn(error))));
    this.answers.request(pending(NO_CHANGES, undefined, errorFrame));
  }
}
