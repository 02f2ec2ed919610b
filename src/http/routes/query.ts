/**
 * `POST /query/`: one SQL statement, checked by the policy with the caller's rights, run on the
 * caller's own upstream role, answered as rows arrive (JSON, NDJSON or CSV; see result-formats).
 * A statement whose client goes away before the end of its answer is cancelled in Postgres, and
 * so is one named by `X-Query-Id` when `POST /query/<id>/cancel` asks for it.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { ControlPlane, Principal } from '../../control/control-plane.js';
import { performHandled } from '../../control/handled.js';
import { errorInOriginal, type Decision, type Policy, type Session } from '../../policy/index.js';
import { PgError, SqlState } from '../../shared/errors.js';
import { sqlForLog } from '../../shared/logger.js';
import { CancelFlag, canceled, RunningStatement, type Row } from '../../upstream/query-run.js';
import type { TypeCatalog } from '../../upstream/query-types.js';
import { REST_SEARCH_PATH } from '../../upstream/role-pools.js';
import type { SessionPool } from '../../upstream/session-pool.js';
import type { UpstreamSession } from '../../upstream/session.js';
import { principalOf } from '../auth.js';
import { isDdlTag } from '../../control/audit.js';
import { audit } from '../metering.js';
import { countError, decisions, originOf, tagOrigin } from '../../observe/metrics.js';
import { publicError } from '../errors.js';
import { CONTENT_TYPES, createWriter, negotiateFormat, type ResultFormat, type ResultWriter } from '../result-formats.js';
import type { RunningQueries } from '../running-queries.js';
import { QueryHeaders, QueryIdParams, QueryRequest, QueryResult } from '../schemas.js';

/** What the query route needs, injected by the composition root. */
export interface QueryDeps {
  control: ControlPlane;
  policy: Policy;
  /** Raw upstream sessions per role, reset lazily (in the round trip of the next statement). */
  sessions: SessionPool;
  /** Start-up settings of REST sessions: search_path, statement timeout, application name. */
  sessionSettings: Readonly<Record<string, string>>;
  types: TypeCatalog;
  /** Row cap of one answer (config maxResultRows). */
  maxRows: number;
  /** Queries named by `X-Query-Id`, for `POST /query/<id>/cancel`. */
  running: RunningQueries;
}

type Started = Awaited<ReturnType<typeof RunningStatement.start>>;

/** Rows per Execute: the unit of memory per request, whatever the size of the result. */
const BATCH_ROWS = 1000;

/** Every REST request is a session of its own, starting from the same search_path as its connection. */
const SESSION: Session = { searchPath: REST_SEARCH_PATH, defaultSearchPath: REST_SEARCH_PATH };

function oneStatement(count: number): void {
  if (count === 1) return;
  throw new PgError(SqlState.SyntaxError, count === 0 ? 'query_string holds no statement' : `query_string holds ${count} statements; the REST API runs one statement per request`, {
    hint: count === 0 ? undefined : 'send each statement in its own request, or use the Postgres wire protocol for scripts',
  });
}

/** What each rewrite of the statement changed (see Decision). */
type Edits = Extract<Decision, { kind: 'rewrite' }>['edits'];

/** A statement to run upstream: the SQL, what rewrites changed in it, and whether it can change a setting (Decision.settingFree). */
interface Run {
  sql: string;
  edits?: Edits;
  settingFree: boolean;
}

/**
 * The SQL to run (the statement, or the policy's rewrite of it), or the command tag when the
 * control plane already did the work. Cached rights and a cached decision are used as they are:
 * the answer comes without a promise when nothing had to be waited for.
 */
function decide(deps: QueryDeps, principal: Principal, sql: string, req: FastifyRequest): Run | Promise<Run | { done: string }> {
  const rights = deps.control.peekRights(principal);
  const decided = rights ? deps.policy.decide(sql, rights, SESSION) : deps.control.rights(principal).then((r) => deps.policy.decide(sql, r, SESSION));
  return decided instanceof Promise ? decided.then<Run | { done: string }>((d) => follow(deps, principal, sql, req, d)) : follow(deps, principal, sql, req, decided);
}

/** What `decision` asks for: a statement to run, an error, or the control plane's work (`handled`). */
function follow(deps: QueryDeps, principal: Principal, sql: string, req: FastifyRequest, decision: Decision): Run | Promise<{ done: string }> {
  decisions.rest[decision.kind].value++;
  switch (decision.kind) {
    case 'deny':
      audit(deps.control, req, { action: 'statement_denied', sql, sqlstate: decision.error.code });
      throw tagOrigin(decision.error, 'policy');
    case 'handled':
      oneStatement(decision.commandTags.length);
      return handled(deps, principal, sql, req, decision);
    case 'allow':
      oneStatement(decision.statements);
      return { sql, settingFree: decision.settingFree === true };
    case 'rewrite':
      oneStatement(decision.statements);
      return { sql: decision.sql, edits: decision.edits, settingFree: decision.settingFree === true };
    default:
      return assertNever(decision);
  }
}

/** Runs a statement the control plane performs (`CREATE SCHEMA` of a repo, …) and audits its changes. */
async function handled(deps: QueryDeps, principal: Principal, sql: string, req: FastifyRequest, decision: Extract<Decision, { kind: 'handled' }>): Promise<{ done: string }> {
  for (const change of await performHandled(deps.control, principal.user, decision.action)) audit(deps.control, req, { ...change, sql });
  deps.control.usage.add(principal.user, { statements: 1 });
  return { done: decision.commandTags[0] ?? '' };
}

/** Usage of a statement that ran (the rows of its answer), and its audit row if it was DDL. */
function ran(deps: QueryDeps, req: FastifyRequest, principal: Principal, sql: string, command: string | null, rows: number): void {
  deps.control.usage.add(principal.user, { statements: 1, rowsReturned: rows });
  if (command !== null && isDdlTag(command)) audit(deps.control, req, { action: 'ddl', target: command, sql });
}

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
    ran(deps, reply.request, principal, queryString, outcome.command, started.firstRows.length);
    return writer.head() + writer.rows(started.firstRows) + writer.end({ command: outcome.command, rowCount: outcome.rowCount, truncated: false });
  }
  return chunked({ deps, principal, queryString, format, reply, session, started, writer });
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
}

/**
 * The answer as a stream of pieces, batch by batch, up to the row cap. Apart from `stream` so
 * that a request answered in one piece does not make this function's generators.
 */
function chunked({ deps, principal, queryString, format, reply, session, started, writer }: Streaming): Readable {
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
      ran(deps, reply.request, principal, queryString, outcome.command, sent);
      yield writer.end({ ...outcome, truncated });
    } catch (err: unknown) {
      const shown = publicError(err, reply.request).error;
      countError('rest', 'upstream', shown.code);
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
  deps.control.watchKey(principal, stop);
  reply.raw.once('close', () => {
    unregister?.();
    deps.control.unwatchKey(principal, stop);
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
          'Accept: application/json (default), application/x-ndjson or text/csv. The answer streams; a failure after rows were sent ends it with an "error" member (JSON, NDJSON) or a cut connection (CSV). Closing the connection before the answer is complete cancels the statement; so does POST /query/<id>/cancel for a query sent with X-Query-Id.',
        tags: ['query'],
        headers: QueryHeaders,
        body: QueryRequest,
        response: { 200: QueryResult },
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const queryString = req.body.query_string;
      const format = negotiateFormat(req.headers.accept);
      const stop = requestStop(deps, principal, req.headers['x-query-id'], reply);
      const decided = decide(deps, principal, queryString, req);
      const next = decided instanceof Promise ? await decided : decided;
      // The 200 schema documents the answer; the answer itself is written here, already JSON/CSV text.
      const raw: FastifyReply = reply;
      raw.type(CONTENT_TYPES[format]);
      if ('done' in next) {
        const writer = createWriter(format, queryString, []);
        return raw.send(writer.head() + writer.end({ command: next.done, rowCount: null, truncated: false }));
      }
      req.log.debug({ sql: sqlForLog(next.sql) }, 'running');
      if (stop.cancelled) throw keyEnded(stop, canceled());
      try {
        return raw.send(await stream(deps, principal, next, queryString, format, raw, stop));
      } catch (err: unknown) {
        if (stop.reason !== undefined) throw keyEnded(stop, err);
        // Postgres counts positions in the rewritten text; the client's caret belongs in its own.
        if (next.edits === undefined || !(err instanceof PgError) || err.position === undefined) throw err;
        throw tagOrigin(errorInOriginal(err, next.sql, queryString, next.edits), originOf(err) ?? 'upstream');
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

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}
