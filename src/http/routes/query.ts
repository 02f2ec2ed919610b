/**
 * `POST /query/`: one SQL statement, checked by the policy with the caller's rights, run on the
 * caller's own upstream role, answered as rows arrive (JSON, NDJSON or CSV; see result-formats).
 * A statement whose client goes away before the end of its answer is cancelled in Postgres, and
 * so is one named by `X-Query-Id` when `POST /query/<id>/cancel` asks for it.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import type { Principal } from '../../control/control-plane.js';
import { errorInOriginal } from '../../policy/index.js';
import { PgError, SqlState } from '../../shared/errors.js';
import { sqlForLog } from '../../shared/logger.js';
import { CancelFlag, canceled } from '../../upstream/cancel-flag.js';
import { RunningStatement, type Row } from '../../upstream/query-run.js';
import type { UpstreamSession } from '../../upstream/session.js';
import { principalOf } from '../auth.js';
import { countError } from '../../observe/metrics.js';
import { originOf, tagOrigin } from '../../observe/error-origins.js';
import { publicError } from '../errors.js';
import { Recording } from '../query-recording.js';
import { CONTENT_TYPES, createWriter, negotiateFormat, type ResultFormat, type ResultWriter } from '../result-formats.js';
import { QueryAccepted, QueryHeaders, QueryIdParams, QueryRequest, QueryResult } from '../schemas.js';
import { decide, ran, type Run } from '../statement-decision.js';
import { answerAsync } from './query-async.js';
import type { QueryDeps } from './query-deps.js';

export type { QueryBody, QueryDeps } from './query-deps.js';

type Started = Awaited<ReturnType<typeof RunningStatement.start>>;

/** Rows per Execute: the unit of memory per request, whatever the size of the result. */
const BATCH_ROWS = 1000;

/**
 * Starts the statement and returns its answer as a stream; errors before the first row are
 * thrown. When `stop` is raised, the statement is cancelled and ends with 57014.
 */
async function stream(
  deps: QueryDeps,
  principal: Principal,
  { sql, settingFree }: Run,
  queryString: string,
  format: ResultFormat,
  reply: FastifyReply,
  stop: CancelFlag,
  entry: Recording | undefined,
): Promise<Readable | string> {
  // The user's own role, or a scoped key's: only the key's scope in Postgres too.
  const session = deps.sessions.takeIdle(principal.role, deps.sessionSettings) ?? (await deps.sessions.acquire(principal.role, deps.sessionSettings));
  let started: Started;
  try {
    started = await RunningStatement.start(session, sql, deps.types, Math.min(BATCH_ROWS, deps.maxRows + 1), stop, settingFree);
  } catch (err: unknown) {
    deps.sessions.release(principal.role, deps.sessionSettings, session, session.status === 'I' && !session.socket.destroyed);
    throw tagOrigin((err instanceof PgError && (await deps.control.explainError(err, sql))) || err, 'upstream');
  }
  const { statement } = started;
  const writer = createWriter(format, queryString, started.columns);
  if (statement.done && started.firstRows.length <= deps.maxRows && format !== 'csv') {
    // The whole answer came in the first batch (the common small query): one string, one write,
    // the session back in the pool before the answer leaves. (CSV streams always: its truncation
    // flag is a trailer, which only a chunked answer has.)
    deps.sessions.release(principal.role, deps.sessionSettings, session, statement.reusable);
    const outcome = statement.outcome;
    ran(deps.control, reply.request, principal, queryString, outcome.command, started.firstRows.length);
    entry?.succeeded(outcome.command, outcome.rowCount);
    return writer.head() + writer.rows(started.firstRows) + writer.end({ command: outcome.command, rowCount: outcome.rowCount, truncated: false });
  }
  return chunked({ deps, principal, queryString, format, reply, session, started, writer, stop, entry });
}

/** A statement whose answer did not come whole in its first batch, and what streaming it needs. */
interface Streaming {
  deps: QueryDeps;
  principal: Principal;
  queryString: string;
  format: ResultFormat;
  reply: FastifyReply;
  session: UpstreamSession;
  started: Started;
  writer: ResultWriter;
  stop: CancelFlag;
  entry: Recording | undefined;
}

/**
 * The answer as a stream of pieces, batch by batch, up to the row cap. Apart from `stream` so
 * that a request answered in one piece does not make this function's generators.
 */
function chunked({ deps, principal, queryString, format, reply, session, started, writer, stop, entry }: Streaming): Readable {
  const { statement } = started;
  let truncated = false;
  let sent = 0;
  const take = (rows: readonly Row[]): readonly Row[] => {
    const room = deps.maxRows - sent;
    if (rows.length > room) {
      truncated = true;
      rows = rows.slice(0, room);
    }
    sent += rows.length;
    return rows;
  };
  if (format === 'csv') reply.trailer('x-repobase-truncated', async () => String(truncated));
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    // Cut short (row cap, client gone, cancelled): Postgres stops at once, and the session is
    // pooled again once it is idle.
    if (!statement.done) await statement.cancel();
    deps.sessions.release(principal.role, deps.sessionSettings, session, statement.reusable);
    entry?.abandoned();
  };
  async function* pieces(): AsyncGenerator<string> {
    try {
      yield writer.head() + writer.rows(take(started.firstRows));
      while (!truncated && !statement.done) {
        const rows = await statement.next(Math.min(BATCH_ROWS, deps.maxRows - sent + 1));
        yield writer.rows(take(rows));
      }
      if (truncated) await statement.cancel();
      const outcome = truncated ? { command: null, rowCount: sent } : statement.outcome;
      ran(deps.control, reply.request, principal, queryString, outcome.command, sent);
      entry?.succeeded(outcome.command, outcome.rowCount);
      yield writer.end({ ...outcome, truncated });
    } catch (err: unknown) {
      const shown = publicError(err, reply.request).error;
      countError('rest', 'upstream', shown.code);
      entry?.failed(shown, stop.cancelled, reply.request.id);
      const closing = writer.failed(shown);
      if (closing === undefined) throw err;
      yield closing;
    } finally {
      // Also reached when the client goes away mid-answer.
      await finish();
    }
  }
  async function* nonEmpty(): AsyncGenerator<string> {
    // An empty chunk would read as "nothing more for now" and could stall the stream.
    for await (const piece of pieces()) if (piece.length) yield piece;
  }
  const body = Readable.from(nonEmpty(), { objectMode: false });
  // A client gone before the first read never starts the generator, so its finally never runs;
  // one gone while the generator waits for rows would leave the statement running until they come.
  body.once('close', () => void finish());
  return body;
}

/**
 * The flag that ends the request's statement: raised when the client goes away before the
 * answer is complete (a browser's fetch abort closes the connection), by a cancel of its
 * `X-Query-Id`, or by the revocation or expiry of its API key (with the reason), registered
 * until the answer ends.
 */
function requestStop(deps: QueryDeps, principal: Principal, queryId: string | undefined, reply: FastifyReply): CancelFlag {
  const stop = new CancelFlag();
  // Named per role: a scoped key cancels its own queries, not those of its user's other keys.
  const unregister = queryId === undefined ? undefined : deps.running.add(principal.role, queryId, stop);
  deps.control.keys.watch(principal, stop);
  reply.raw.once('close', () => {
    unregister?.();
    deps.control.keys.unwatch(principal, stop);
    if (!reply.raw.writableFinished) stop.cancel();
  });
  return stop;
}

/** The error of a statement cancelled because its API key was revoked or expired (401, saying which). */
function keyEnded(stop: CancelFlag, err: unknown): unknown {
  if (stop.reason === undefined) return err;
  return new PgError(SqlState.InvalidAuthorizationSpecification, `canceling statement: ${stop.reason}`, { hint: 'send it again with another API key' });
}

/** `POST /query/` and `POST /query/<id>/cancel`. */
export const queryRoutes: FastifyPluginAsyncTypebox<QueryDeps> = async (app, deps) => {
  app.post(
    '/query/',
    {
      schema: {
        summary: 'run one SQL statement',
        description:
          'Accept: application/json (default), application/x-ndjson or text/csv. The answer streams; a failure after rows were sent ends it with an "error" member (JSON, NDJSON) or a cut connection (CSV). Closing the connection before the answer is complete cancels the statement; so does POST /query/<id>/cancel for a query sent with X-Query-Id. With "async": true the statement runs in the background: 202 with its id at once (or, with "wait_ms", the answer as without async if it ended within that time); see /queries/.',
        tags: ['query'],
        headers: QueryHeaders,
        body: QueryRequest,
        response: { 200: QueryResult, 202: QueryAccepted },
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const queryString = req.body.query_string;
      const entry = deps.queries.recordsHistory ? new Recording(deps.queries.history, principal, queryString, Date.now()) : undefined;
      if (req.body.async === true || req.body.wait_ms !== undefined) return answerAsync(deps, req, req.body, reply, principal, entry);
      const stop = requestStop(deps, principal, req.headers['x-query-id'], reply);
      let next: Run | { done: string } | undefined;
      try {
        const format = negotiateFormat(req.headers.accept);
        const decided = decide(deps, principal, queryString, req);
        next = decided instanceof Promise ? await decided : decided;
        // The 200 schema documents the answer; the answer itself is written here, already JSON/CSV text.
        const raw: FastifyReply = reply;
        raw.type(CONTENT_TYPES[format]);
        if ('done' in next) {
          entry?.succeeded(next.done, null);
          const writer = createWriter(format, queryString, []);
          return raw.send(writer.head() + writer.end({ command: next.done, rowCount: null, truncated: false }));
        }
        req.log.debug({ sql: sqlForLog(next.sql) }, 'running');
        if (stop.cancelled) throw canceled();
        return raw.send(await stream(deps, principal, next, queryString, format, raw, stop, entry));
      } catch (err: unknown) {
        if (stop.reason !== undefined) throw keyEnded(stop, err);
        // Postgres counts positions in the rewritten text; the client's caret belongs in its own.
        const run = next !== undefined && !('done' in next) ? next : undefined;
        const shown =
          run?.edits !== undefined && err instanceof PgError && err.position !== undefined ? tagOrigin(errorInOriginal(err, run.sql, queryString, run.edits), originOf(err) ?? 'upstream') : err;
        entry?.failed(shown, stop.cancelled, req.id);
        throw shown;
      }
    },
  );

  // Another user's query answers 404 like an unknown one: ids are not a way to probe.
  app.post(
    '/query/:id/cancel',
    {
      schema: {
        summary: 'cancel a running query',
        description:
          'Cancels your query sent with this X-Query-Id, whichever server process runs it: its POST /query/ answers 57014 "canceling statement due to user request". 404 when none of your queries with that id is running.',
        tags: ['query'],
        params: QueryIdParams,
        response: { 204: Type.Null({ description: 'the cancel was sent' }) },
      },
    },
    async (req, reply) => {
      const { id } = req.params;
      if (!(await deps.running.cancel(principalOf(req).role, id))) {
        throw new PgError(SqlState.UndefinedObject, `no running query with id "${id}"`, {
          hint: 'the id is the X-Query-Id header of one of your own POST /query/ requests still running',
        });
      }
      return reply.code(204).send(null);
    },
  );
};

