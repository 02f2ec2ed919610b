/**
 * `/queries/`: the caller's async queries and the history of their `POST /query/` requests —
 * one query's state, its stored result (paged, in the formats of `POST /query/`), its cancel or
 * deletion, and the list, newest first. Another user's query answers 404 like an unknown id.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import type { Principal } from '../../control/control-plane.js';
import type { QueryOwner, QueryRecord } from '../../control/query-records.js';
import { PgError, SqlState } from '../../shared/errors.js';
import type { AsyncQueries } from '../async-queries.js';
import { principalOf } from '../auth.js';
import { shownError } from '../errors.js';
import { CONTENT_TYPES, fieldsJson, negotiateFormat } from '../result-formats.js';
import { QueryInfo, QueryList, QueryListQuery, QueryResult, QueryUuidParams, ResultQuery } from '../schemas.js';
import { columnsOf, readableRange, storedAnswer } from '../stored-result.js';

export interface QueriesDeps {
  queries: AsyncQueries;
  /** Config asyncResultTtlMs: when a stored result expires. */
  resultTtlMs: number;
}

/** Whose queries `principal` sees: all of its user's, or a scoped key only those run with it. */
export function ownerOf(principal: Principal): QueryOwner {
  return { user: principal.user, keyId: principal.role === principal.user ? null : principal.keyId };
}

/** The path of a query's state. */
export function statusUrl(id: string): string {
  return `/api/v1beta/queries/${id}`;
}

function notFound(id: string): PgError {
  return new PgError(SqlState.UndefinedObject, `no query with id "${id}"`, { hint: 'ids come from POST /query/ with "async": true, or from GET /api/v1beta/queries/' });
}

/**
 * A query as the API shows it, as JSON text: `fields` is written in the columns' order (an object
 * built first would put names like "1" ahead of the others, as POST /query/ avoids too).
 */
export function queryJson(r: QueryRecord, resultTtlMs: number): string {
  const kept = r.async && r.status === 'succeeded' && r.resultBytes > 0 && r.finishedAt !== null;
  const info: Omit<QueryInfo, 'fields'> = {
    id: r.id,
    status: r.status,
    async: r.async,
    query_string: r.queryString,
    query_truncated: r.queryTruncated,
    submitted_at: r.submittedAt.toISOString(),
    started_at: r.startedAt?.toISOString() ?? null,
    finished_at: r.finishedAt?.toISOString() ?? null,
    row_count: r.rowCount,
    command: r.command,
    rows_stored: r.rowsStored,
    result_expires_at: kept ? new Date(r.finishedAt!.getTime() + resultTtlMs).toISOString() : null,
    // jsonb keeps keys in an order of its own: written in the order of every error answer.
    error: r.error && { code: r.error.code, message: r.error.message, detail: r.error.detail, hint: r.error.hint, position: r.error.position },
  };
  const text = JSON.stringify(info);
  return `${text.slice(0, -1)},"fields":${r.fields === null ? 'null' : fieldsJson(columnsOf(r.fields))}}`;
}

function sendJson(reply: FastifyReply, text: string): FastifyReply {
  return (reply as FastifyReply).type('application/json; charset=utf-8').send(text);
}

/** Routes under `/queries/`. */
export const queriesRoutes: FastifyPluginAsyncTypebox<QueriesDeps> = async (app, { queries, resultTtlMs }) => {
  app.get(
    '/queries/',
    {
      schema: {
        summary: 'your queries, newest first: async ones and every POST /query/ of the last days (the history)',
        tags: ['query'],
        querystring: QueryListQuery,
        response: { 200: QueryList },
      },
    },
    async (req, reply) => {
      const list = await queries.list(ownerOf(principalOf(req)), { status: req.query.status, limit: req.query.limit ?? 100 });
      return sendJson(reply, `{"queries":[${list.map((r) => queryJson(r, resultTtlMs)).join(',')}]}`);
    },
  );

  app.get(
    '/queries/:id',
    { schema: { summary: 'one of your queries: its status, timing, rows, columns and error', tags: ['query'], params: QueryUuidParams, response: { 200: QueryInfo } } },
    async (req, reply) => {
      const record = await queries.get(req.params.id, ownerOf(principalOf(req)));
      if (!record) throw notFound(req.params.id);
      return sendJson(reply, queryJson(record, resultTtlMs));
    },
  );

  app.get(
    '/queries/:id/result',
    {
      schema: {
        summary: "the stored result of an async query, paged: rows as POST /query/ answers them",
        description:
          'Accept: application/json (default), application/x-ndjson or text/csv, as for POST /query/. ?offset= (default 0) and ?limit= (default: to the end) choose the rows; a page past the end is empty. 409 (55000) while the query is queued, failed or cancelled, while it runs beyond the rows stored so far, and once its result is deleted.',
        tags: ['query'],
        params: QueryUuidParams,
        querystring: ResultQuery,
        response: { 200: QueryResult },
      },
    },
    async (req, reply) => {
      const record = await queries.get(req.params.id, ownerOf(principalOf(req)));
      if (!record) throw notFound(req.params.id);
      const range = readableRange(record, req.query.offset ?? 0, req.query.limit);
      const format = negotiateFormat(req.headers.accept);
      const answer = await storedAnswer(queries.admin, record, format, range, (err) => shownError(err, `request id ${req.id}`));
      const raw: FastifyReply = reply;
      return raw.type(CONTENT_TYPES[format]).send(answer);
    },
  );

  app.delete(
    '/queries/:id',
    {
      schema: {
        summary: 'cancel a queued or running query (its statement cancelled in Postgres), or delete one that ended with its result',
        description: 'A query cancelled answers 200 with its state (status "cancelled") once its statement is gone; a query deleted answers 204.',
        tags: ['query'],
        params: QueryUuidParams,
        response: { 200: QueryInfo, 204: Type.Null({ description: 'the query and its result are deleted' }) },
      },
    },
    async (req, reply) => {
      const removal = await queries.remove(req.params.id, ownerOf(principalOf(req)));
      switch (removal.kind) {
        case 'missing':
          throw notFound(req.params.id);
        case 'deleted':
          return reply.code(204).send(null);
        case 'cancelled':
          return sendJson(reply, queryJson(removal.record, resultTtlMs));
      }
    },
  );
};
