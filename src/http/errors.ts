/**
 * The one error path of the HTTP front end: anything thrown becomes a PgError, its HTTP status
 * comes from its SQLSTATE (a few exact codes, then the class; never the message text), and the
 * body is `{"error":{code,message,detail,hint,position},"query_string"}`. Errors that are not
 * PgErrors, and repobase's own XX000s, are logged with their stack and answered as
 * `XX000 internal error`; an error the upstream reported keeps its message, whatever its code.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PgError, SqlState } from '../shared/errors.js';
import { countError } from '../observe/metrics.js';
import { originOf } from '../observe/error-origins.js';

/** Codes whose status differs from their class's. */
const BY_CODE: Readonly<Record<string, number>> = {
  [SqlState.InsufficientPrivilege]: 403,
  [SqlState.InvalidSchemaName]: 404, // 3F000: unknown repo
  [SqlState.UndefinedTable]: 404, // 42P01
  [SqlState.UndefinedObject]: 404, // 42704: unknown user, key, collaborator
  [SqlState.InvalidCatalogName]: 404, // 3D000
  [SqlState.QueryCanceled]: 504, // 57014: statement timeout
  // A request body that breaks its own format (a cut-off upload): the client's fault, not the
  // upstream connection's, which is what the rest of class 08 means here.
  [SqlState.ProtocolViolation]: 400,
  '53400': 429, // configuration_limit_exceeded: the per-user rate limit
  [SqlState.DiskFull]: 507, // 53100: the user's storage quota is used up (not a passing shortage: retrying will not help)
  // Duplicates are conflicts, whatever class they sit in.
  '42701': 409,
  '42710': 409,
  '42712': 409,
  '42723': 409,
  '42P03': 409,
  '42P04': 409,
  '42P05': 409,
  '42P06': 409,
  '42P07': 409,
};

/** Status by the first two characters of the SQLSTATE. */
const BY_CLASS: Readonly<Record<string, number>> = {
  '0A': 400, // feature not supported (here: for this statement)
  '0L': 403, // invalid grantor
  '0P': 403, // invalid role specification
  '08': 503, // upstream connection
  '21': 400, // cardinality
  '22': 400, // data
  '23': 409, // integrity constraints
  '24': 400, // cursor state
  '25': 409, // transaction state
  '26': 400, // prepared statement name
  '28': 401, // authorization: no or bad API key
  '2B': 409, // dependent objects still exist
  '2F': 400, // SQL routine
  '34': 400, // cursor name
  '38': 400, // external routine
  '39': 400, // external routine invocation
  '3B': 400, // savepoint
  '3F': 404, // schema
  '40': 409, // serialization failure, deadlock: retry
  '42': 400, // syntax and access rule
  '44': 409, // WITH CHECK OPTION
  '53': 503, // insufficient resources upstream
  '54': 413, // program limit: too large
  '55': 409, // object not in prerequisite state (locks)
  '57': 503, // operator intervention: shutdown, cannot connect now
  P0: 400, // PL/pgSQL RAISE in a user's function
};

/** HTTP status of a SQLSTATE; 500 for everything not listed. */
export function statusForSqlState(code: string): number {
  return BY_CODE[code] ?? BY_CLASS[code.slice(0, 2)] ?? 500;
}

/** Fastify's own errors (validation, body limits, parsing) as PgErrors, by their error code. */
function fromFastifyError(err: FastifyError): PgError | undefined {
  if (err.validation) return new PgError(SqlState.InvalidParameterValue, `invalid request: ${err.message}`);
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PgError(SqlState.ProgramLimitExceeded, 'request body too large', { hint: 'the server limit is set by httpBodyLimitBytes' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new PgError(SqlState.InvalidParameterValue, 'unsupported content type', { hint: 'send the body as application/json' });
    // @fastify/multipart's limits and refusals (its own statuses are 413, 400 and 406).
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new PgError(SqlState.ProgramLimitExceeded, `multipart upload refused: ${err.message}`);
    case 'FST_PROTO_VIOLATION':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
    case 'FST_INVALID_JSON_FIELD_ERROR':
    case 'FST_MP_PREMATURE_CLOSE':
      return new PgError(SqlState.InvalidParameterValue, `malformed multipart upload: ${err.message}`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new PgError(SqlState.InvalidTextRepresentation, 'request body is not valid JSON');
    default:
      // JSON.parse failures of the body parser carry status 400 but no code of their own.
      if (err instanceof SyntaxError && err.statusCode === 400) return new PgError(SqlState.InvalidTextRepresentation, 'request body is not valid JSON');
      return undefined;
  }
}

/**
 * busboy, the parser under @fastify/multipart, reports a malformed body (no boundary, cut off
 * inside a part) with plain Errors that carry no code: their text is all there is to go by.
 */
const MULTIPART_SYNTAX = /^(Multipart: Boundary not found|Unexpected end of multipart data|\w+ terminated early due to unexpected end of multipart data)$/;

function fromMultipartError(err: unknown): PgError | undefined {
  if (!(err instanceof Error) || 'code' in err || !MULTIPART_SYNTAX.test(err.message)) return undefined;
  return new PgError(SqlState.ProtocolViolation, `malformed multipart upload: ${err.message}`);
}

/** The JSON body of every error answer. */
export interface ErrorBody {
  error: { code: string; message: string; detail: string | null; hint: string | null; position: number | null };
  query_string?: string;
}

/** The JSON error object; also written at the end of a result that failed mid-stream. */
export function errorObject(err: PgError): ErrorBody['error'] {
  return { code: err.code, message: err.message, detail: err.detail ?? null, hint: err.hint ?? null, position: err.position ?? null };
}

/** The query the request carried, echoed in error bodies of `POST /query/`. */
export function queryStringOf(req: FastifyRequest): string | undefined {
  const body = req.body as { query_string?: unknown } | undefined | null;
  return typeof body?.query_string === 'string' ? body.query_string : undefined;
}

/**
 * What a client may see of `err` (without logging it): its own PgError, or `XX000 internal error`
 * for anything else and for repobase's own XX000s (an upstream's keeps its message).
 */
export function shownError(err: unknown, detail?: string): PgError {
  if (err instanceof PgError && (statusForSqlState(err.code) !== 500 || err.fromUpstream)) return err;
  return new PgError(SqlState.InternalError, 'internal error', { detail });
}

/** What a client sees of `err`, and the status; non-PgErrors become XX000 and are logged here. */
export function publicError(err: unknown, req: FastifyRequest): { status: number; error: PgError } {
  const pgErr =
    err instanceof PgError ? err : typeof err === 'object' && err !== null && 'code' in err ? fromFastifyError(err as FastifyError) : fromMultipartError(err);
  const status = pgErr ? statusForSqlState(pgErr.code) : 500;
  // An upstream's own error (Citus reports some refusals as XX000) is the client's to read.
  if (!pgErr || (status === 500 && !pgErr.fromUpstream)) {
    req.log.error({ err }, 'internal error');
    return { status: 500, error: new PgError(SqlState.InternalError, 'internal error', { detail: `request id ${req.id}` }) };
  }
  if (status >= 500) req.log.warn({ err: pgErr.toJSON() }, 'request failed');
  else req.log.debug({ err: pgErr.toJSON() }, 'request refused');
  return { status, error: pgErr };
}

/** RFC 6750 challenge: no credentials → just the scheme; rejected credentials → invalid_token. */
function challenge(code: string): string {
  return code === SqlState.InvalidAuthorizationSpecification ? 'Bearer realm="repobase"' : 'Bearer realm="repobase", error="invalid_token"';
}

/**
 * Every error answer of the HTTP front end, Fastify's own (validation, body limits, unknown
 * routes) included, is written here, and counted in the metrics by the origin the error was
 * tagged with (the policy, the upstream; anything else is the proxy's) and the SQLSTATE the
 * client gets.
 */
function sendError(err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, error } = publicError(err, req);
  countError('rest', originOf(err) ?? 'proxy', error.code);
  if (status === 401) reply.header('www-authenticate', challenge(error.code));
  const body: ErrorBody = { error: errorObject(error) };
  const query = queryStringOf(req);
  if (query !== undefined) body.query_string = query;
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** Answers a request nothing else answered, returning true; false leaves it to the JSON 404. */
export type PageFallback = (req: FastifyRequest, reply: FastifyReply) => boolean;

/**
 * Installs the error and not-found handlers on `app` (and so on every plugin inside it).
 * `pages` gets the first say on unmatched requests: the web console's client-side routes.
 */
export function installErrorHandling(app: FastifyInstance, pages?: PageFallback): void {
  app.setErrorHandler((err, req, reply) => sendError(err, req, reply));
  app.setNotFoundHandler((req, reply) => {
    if (pages?.(req, reply)) return reply;
    return sendError(new PgError(SqlState.UndefinedObject, `no such endpoint: ${req.method} ${req.url.split('?')[0] ?? ''}`, { hint: 'see /api/docs' }), req, reply);
  });
}
