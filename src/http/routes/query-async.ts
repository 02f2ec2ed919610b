/**
 * `POST /query/` with `"async": true`: the statement is judged by the policy now (a denial is
 * answered at once, as without async), then queued and run in the background; the answer is
 * `202 {"id","status","query_string","submitted_at","status_url"}` with `Location`. With
 * `"wait_ms"`, the request first waits up to that long, and a query that ended by then is answered
 * as `POST /query/` answers (its rows from the stored result, or its error with its status).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../../control/control-plane.js';
import { insertDone, type QueryRecord } from '../../control/query-records.js';
import { PgError, SqlState } from '../../shared/errors.js';
import { shownError } from '../errors.js';
import type { Recording } from '../query-recording.js';
import { CONTENT_TYPES, negotiateFormat } from '../result-formats.js';
import type { QueryAccepted } from '../schemas.js';
import { decide, originOf } from '../statement-decision.js';
import { readableRange, storedAnswer } from '../stored-result.js';
import { ownerOf, statusUrl } from './queries.js';
import type { QueryBody, QueryDeps } from './query-deps.js';

const ended = (r: QueryRecord) => r.status !== 'queued' && r.status !== 'running';

/** The error a query ended with, to answer as `POST /query/` would have. */
function storedError(r: QueryRecord): PgError {
  const e = r.error;
  if (!e) return new PgError('57014', 'canceling statement due to user request');
  // Stored as the client may see it already: an upstream's or a policy's words, never internals.
  return new PgError(e.code, e.message, { detail: e.detail ?? undefined, hint: e.hint ?? undefined, position: e.position ?? undefined, fromUpstream: true });
}

/** Submits the query of `body` and answers 202 (or, with `wait_ms`, as without async if it ended in time). */
export async function answerAsync(deps: QueryDeps, req: FastifyRequest, body: QueryBody, reply: FastifyReply, principal: Principal, entry: Recording | undefined): Promise<FastifyReply> {
  try {
    if (body.async !== true) throw new PgError(SqlState.InvalidParameterValue, '"wait_ms" is for async queries', { hint: 'send "async": true with it' });
    return await submitted(deps, req, body, reply, principal, entry);
  } catch (err: unknown) {
    // A failure before the query was queued (a denial, a syntax error) is the request's history entry.
    entry?.failed(err, false, req.id);
    throw err;
  }
}

async function submitted(deps: QueryDeps, req: FastifyRequest, body: QueryBody, reply: FastifyReply, principal: Principal, entry: Recording | undefined): Promise<FastifyReply> {
  const { query_string: queryString, wait_ms: waitMs } = body;
  const owner = ownerOf(principal);
  const decided = await decide(deps, principal, queryString, req);
  let record =
    'done' in decided
      ? await insertDone(deps.control.admin, { user: principal.user, keyId: principal.keyId, queryString, command: decided.done })
      : await deps.queries.submit(principal, queryString, decided, originOf(req));
  // From here on the query's own row is its history.
  entry?.dismiss();
  if (waitMs !== undefined && !ended(record)) {
    await deps.queries.waitFor(record.id, owner, waitMs);
    record = (await deps.queries.get(record.id, owner)) ?? record;
  }
  if (waitMs !== undefined && ended(record)) {
    reply.header('content-location', statusUrl(record.id));
    if (record.status !== 'succeeded') throw storedError(record);
    const format = negotiateFormat(req.headers.accept);
    const answer = await storedAnswer(deps.queries.admin, record, format, readableRange(record, 0, undefined), (err) => shownError(err, `request id ${req.id}`));
    return reply.type(CONTENT_TYPES[format]).send(answer);
  }
  const accepted: QueryAccepted = {
    id: record.id,
    status: record.status,
    query_string: record.queryString,
    submitted_at: record.submittedAt.toISOString(),
    status_url: statusUrl(record.id),
  };
  return reply.code(202).header('location', accepted.status_url).send(accepted);
}
