/**
 * TypeBox schemas of the REST API: each is at once the request validation, the TypeScript type
 * of the handler's input and output, and the OpenAPI document (`/api/openapi.json`).
 */
import Type, { type Static, type TSchema } from 'typebox';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** The body of every error answer; shared by all routes through the `4xx`/`5xx` responses. */
export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'SQLSTATE, e.g. 42501', pattern: '^[0-9A-Z]{5}$' }),
      message: Type.String(),
      detail: Nullable(Type.String()),
      hint: Nullable(Type.String()),
      position: Nullable(Type.Integer({ description: '1-based character position in query_string' })),
    }),
    query_string: Type.Optional(Type.String({ description: 'the query of a failed POST /query/' })),
  },
  { $id: 'Error', description: 'An error; the HTTP status follows the SQLSTATE class' },
);

export const RepoName = Type.String({
  pattern: '^[A-Za-z0-9_.-]{1,100}$',
  description: 'repo name: 1–100 letters, digits, _, - and .',
});
export const UserName = Type.String({ pattern: '^[a-z][a-z0-9_]{1,38}$', description: 'user name' });

export const Access = Type.Union([Type.Literal('own'), Type.Literal('write'), Type.Literal('read')], {
  description: "the caller's access: own, write (collaborator), read (collaborator or public)",
});

export const Repo = Type.Object(
  {
    name: Type.String({ description: '<owner>/<repo>, also the schema name in SQL' }),
    owner: Type.String(),
    repo: Type.String(),
    is_private: Type.Boolean(),
    description: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    permission: Access,
  },
  { $id: 'Repo' },
);
export type Repo = Static<typeof Repo>;

export const RepoDetail = Type.Object(
  {
    ...Repo.properties,
    tables: Type.Array(
      Type.Object({
        name: Type.String(),
        row_estimate: Nullable(
          Type.Integer({ description: "Postgres' estimate of the rows (pg_class.reltuples), not a count; null when never analysed, and for views" }),
        ),
        primary_key: Type.Array(Type.String(), { description: 'the primary key columns in key order; empty when there is none' }),
        columns: Type.Array(
          Type.Object({
            name: Type.String(),
            type: Type.String({ description: 'e.g. BIGINT, NUMERIC(10,2), TEXT[]' }),
            nullable: Type.Boolean({ description: 'false for NOT NULL columns' }),
            default: Nullable(Type.String({ description: "the default expression as Postgres prints it, e.g. now(), 'new'::text" })),
          }),
        ),
      }),
    ),
  },
  { $id: 'RepoDetail' },
);

export type RepoDetail = Static<typeof RepoDetail>;

export const RepoList = Type.Object({ repos: Type.Array(Repo) });
export type RepoList = Static<typeof RepoList>;
export const RepoListQuery = Type.Object({
  include: Type.Optional(Type.Literal('shared', { description: 'also the repos shared with you (each with your permission)' })),
});

export const CreateRepo = Type.Object({
  name: Type.String({
    pattern: '^(?:[a-z][a-z0-9_]{1,38}/)?[A-Za-z0-9_.-]{1,100}$',
    description: 'repo name, or <your user>/<repo>; it is created in your own namespace',
  }),
  is_private: Type.Optional(Type.Boolean({ default: true })),
  description: Type.Optional(Type.String({ default: '', maxLength: 10_000 })),
});

export const UpdateRepo = Type.Object(
  {
    is_private: Type.Optional(Type.Boolean()),
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
  },
  { minProperties: 1 },
);

export const RepoParams = Type.Object({ owner: UserName, repo: RepoName });
export const CollaboratorParams = Type.Object({ owner: UserName, repo: RepoName, user: UserName });

export const Permission = Type.Union([Type.Literal('read'), Type.Literal('write')]);
export const SetCollaborator = Type.Object({ permission: Permission });
export const Collaborator = Type.Object({ user: Type.String(), permission: Permission });
export type Collaborator = Static<typeof Collaborator>;
export const CollaboratorList = Type.Object({ collaborators: Type.Array(Collaborator) });
export type CollaboratorList = Static<typeof CollaboratorList>;

export const KeyAccess = Type.Union([Type.Literal('read'), Type.Literal('write'), Type.Literal('full')], {
  description: 'read: reads only; write: reads, and changes rows and structure, of its repos; full: everything its user may do (keys, repos, sharing too)',
});

/** A key as listed (never its secret). */
export const KeyInfo = Type.Object({
  id: Type.String({ description: 'public key id, used to revoke it' }),
  prefix: Type.String({ description: 'rb_<id>: how the key starts' }),
  name: Type.String({ description: 'what it is for; empty when not named' }),
  repos: Nullable(Type.Array(Type.String(), { description: 'the repos it reaches (<user>/<repo>); null: every repo its user may reach, now and later' })),
  access: KeyAccess,
  expires_at: Nullable(Type.String({ format: 'date-time', description: 'when it stops working; null: never' })),
  expired: Type.Boolean({ description: 'true once expires_at has passed: the key no longer works' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Nullable(Type.String({ format: 'date-time' })),
});
export type KeyInfo = Static<typeof KeyInfo>;
export const KeyList = Type.Object({ keys: Type.Array(KeyInfo) });
export type KeyList = Static<typeof KeyList>;

/** `POST /keys/`: every field optional; an empty body makes a full key, as before. */
export const CreateKey = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 100, description: 'what the key is for, e.g. "dashboard"' })),
    repos: Type.Optional(
      Nullable(Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_]{1,38}/[A-Za-z0-9_.-]{1,100}$' }), { minItems: 1, maxItems: 100, description: 'repos (<user>/<repo>) you own or collaborate on; leave out (or null) for every repo' })),
    ),
    access: Type.Optional(KeyAccess),
    expires_at: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'a time in the future; leave out (or null) for a key that does not expire' }))),
  },
  { additionalProperties: false, description: 'access defaults to "read" when repos are given, else to "full"' },
);
export type CreateKey = Static<typeof CreateKey>;

export const NewKey = Type.Object({
  id: Type.String(),
  prefix: Type.String(),
  key: Type.String({ description: 'the whole API key; shown this once, never stored' }),
  name: Type.String(),
  repos: Nullable(Type.Array(Type.String())),
  access: KeyAccess,
  expires_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
});
export type NewKey = Static<typeof NewKey>;

/** Sign-up and log-in of a person (the web console); API clients use keys. */
export const Credentials = Type.Object({
  username: UserName,
  password: Type.String({ minLength: 10, maxLength: 1024, description: 'at least 10 characters' }),
});
export type Credentials = Static<typeof Credentials>;

/**
 * Who is calling. With a session cookie, `csrf_token` must be sent back in the `X-CSRF-Token`
 * header of every request that changes something; with a Bearer key it is null.
 */
export const SessionInfo = Type.Object(
  {
    user: Type.String(),
    csrf_token: Nullable(Type.String()),
  },
  { $id: 'Session' },
);
export type SessionInfo = Static<typeof SessionInfo>;

/** Where clients connect: what the Connect dialog puts in connection strings. */
export const ConnectionInfo = Type.Object({
  pg_host: Type.String({ description: 'host name for the Postgres wire protocol' }),
  pg_port: Type.Integer(),
  api_url: Type.String({ description: 'base URL of the REST API, e.g. http://127.0.0.1:8080/api/v1beta' }),
  service_database: Type.String({ description: 'database name of the service (repos are also databases "<user>/<repo>")' }),
});
export type ConnectionInfo = Static<typeof ConnectionInfo>;
export const KeyParams = Type.Object({ id: Type.String({ pattern: '^[0-9a-f]{12}$' }) });

export const QueryRequest = Type.Object({
  query_string: Type.String({ description: 'one SQL statement' }),
  async: Type.Optional(
    Type.Boolean({ description: 'run it in the background: the answer is 202 with the query\'s id at once, its result kept to be read from GET /queries/<id>/result' }),
  ),
  wait_ms: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 50_000, description: 'with async: wait up to this long first, and answer as without async if the query ended by then' }),
  ),
});

export const QueryResult = Type.Object({
  query_string: Type.String(),
  fields: Type.Record(Type.String(), Type.String(), {
    description: 'column name → SQL type (BIGINT, TEXT, NUMERIC(10,2), TEXT[]); repeated names get _2, _3…',
  }),
  data: Type.Array(Type.Array(Type.Unknown()), {
    description: 'one array per row, in column order: numbers with the digits Postgres printed, true/false, null, embedded json, arrays; everything else as text',
  }),
  command: Nullable(Type.String({ description: 'command tag: SELECT, INSERT, CREATE TABLE… (null if the result was truncated)' })),
  row_count: Nullable(Type.Integer({ description: 'count of the command tag; null for commands without one' })),
  truncated: Type.Optional(Type.Literal(true, { description: 'present when the row cap (maxResultRows) cut the result' })),
  error: Type.Optional(ErrorBody.properties.error),
});

/** A client's name for a running query, sent as `X-Query-Id` so that it can cancel it. */
const QUERY_ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$';

/** Request headers of `POST /query/`. */
export const QueryHeaders = Type.Object({
  'x-query-id': Type.Optional(
    Type.String({ pattern: QUERY_ID_PATTERN, description: '1–64 letters, digits, _ and -, chosen by the client: names this query so that POST /query/<id>/cancel can cancel it' }),
  ),
});

export const QueryIdParams = Type.Object({ id: Type.String({ pattern: QUERY_ID_PATTERN, description: 'the X-Query-Id the query was sent with' }) });

/** The `data` of one `schema` event of `GET /events`. */
export const SchemaEvent = Type.Object(
  {
    repo: Type.String({ description: '<owner>/<repo>' }),
    table: Nullable(Type.String({ description: 'the table or view concerned; null for the repo itself or another kind of object' })),
    command: Type.String({ description: 'command tag of the change: CREATE TABLE, ALTER TABLE, DROP TABLE, CREATE SCHEMA…' }),
  },
  { description: 'one schema change: the data line of an "event: schema" message' },
);
export type SchemaEvent = Static<typeof SchemaEvent>;

export const QueryStatus = Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('cancelled')], {
  description: 'queued (waiting for a free slot of your asyncMaxRunning), running, succeeded, failed, cancelled',
});

/** The answer to `POST /query/` with `"async": true`. */
export const QueryAccepted = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    status: QueryStatus,
    query_string: Type.String(),
    submitted_at: Type.String({ format: 'date-time' }),
    status_url: Type.String({ description: 'where to poll it: /api/v1beta/queries/<id> (also the Location header)' }),
  },
  { $id: 'QueryAccepted' },
);
export type QueryAccepted = Static<typeof QueryAccepted>;

/** One query: async, or a `POST /query/` of the history. */
export const QueryInfo = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    status: QueryStatus,
    async: Type.Boolean({ description: 'false for a POST /query/ without async: listed in the history, its result not kept' }),
    query_string: Type.String(),
    query_truncated: Type.Boolean({ description: 'true when the history kept only the first 65,536 characters of a longer statement' }),
    submitted_at: Type.String({ format: 'date-time' }),
    started_at: Nullable(Type.String({ format: 'date-time' })),
    finished_at: Nullable(Type.String({ format: 'date-time' })),
    row_count: Nullable(Type.Integer({ description: 'count of the command tag, once it ended' })),
    command: Nullable(Type.String({ description: 'command tag: SELECT, INSERT, CREATE TABLE…' })),
    rows_stored: Type.Integer({ description: 'rows of the result stored so far (readable already while it runs)' }),
    result_expires_at: Nullable(Type.String({ format: 'date-time', description: 'when its stored result will be deleted; null when none is kept' })),
    fields: Nullable(
      Type.Record(Type.String(), Type.String(), { description: 'the result\'s columns as in POST /query/, once the statement described them' }),
    ),
    error: Nullable(ErrorBody.properties.error),
  },
  { $id: 'QueryInfo' },
);
export type QueryInfo = Static<typeof QueryInfo>;
export const QueryList = Type.Object({ queries: Type.Array(QueryInfo) });
export type QueryList = Static<typeof QueryList>;

export const QueryListQuery = Type.Object({
  status: Type.Optional(QueryStatus),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'at most this many, newest first' })),
});

export const QueryUuidParams = Type.Object({ id: Type.String({ maxLength: 100, description: 'the id POST /query/ with async answered, or one from GET /queries/' }) });

export const ResultQuery = Type.Object({
  offset: Type.Optional(Type.Integer({ minimum: 0, description: 'the first row to answer, 0-based (default 0)' })),
  limit: Type.Optional(Type.Integer({ minimum: 0, description: 'rows to answer at most (default: to the end)' })),
});
// ── usage and limits (GET /usage/) ──────────────────────────────────────────────────────

const Count = (description: string) => Type.Integer({ minimum: 0, description });

export const UsageHour = Type.Object({
  hour: Type.String({ format: 'date-time', description: 'start of the hour (UTC)' }),
  statements: Count('statements that completed'),
  rows_returned: Count('rows returned to the client (wire: from the command tags of SELECT, FETCH, COPY TO and RETURNING; REST: the rows of the answers)'),
  bytes_in: Count('bytes received: wire protocol bytes from the client, REST request bodies'),
  bytes_out: Count('bytes sent: wire protocol bytes to the client, REST answers with their headers'),
  upload_bytes: Count('bytes of files uploaded (POST /import/)'),
  queued_ms: Count('milliseconds your transactions waited for their turn upstream (the fair queue)'),
});

export const Storage = Type.Object(
  {
    repo_bytes: Count('bytes of the tables, indexes and materialized views in your repos'),
    large_objects: Count('large objects you own (the lo_* functions of libpq, pgjdbc LargeObjectManager)'),
    large_object_bytes: Type.Union([Count('their bytes'), Type.Null()], { description: 'their bytes; null where the service may not read pg_largeobject' }),
  },
  { description: 'what you keep stored now, read live' },
);

export const Limits = Type.Object(
  {
    connections: Count('wire connections open at once'),
    active: Count('transactions running upstream at once'),
    statement_timeout_ms: Count('statement timeout, wire and REST'),
    idle_in_transaction_timeout_ms: Count('a wire client idle inside a transaction this long is ended (25P03)'),
    storage_bytes: Count('storage quota: past it statements that add data fail with 53100'),
    time_budget_ms: Count('upstream time per minute before your transactions are slowed (a lower weight in the queue)'),
  },
  { description: 'your limits; 0 = none' },
);

export const UsageNow = Type.Object(
  {
    wire_connections: Count('your wire connections open now on this instance (all its worker processes)'),
    active_transactions: Count('your transactions open upstream now (running, or idle inside a transaction), on every instance'),
    queued_ms: Count('milliseconds your transactions waited for their turn since `queued_since`'),
    queued_since: Type.String({ format: 'date-time', description: 'the start of the hour before the current one' }),
  },
  { description: 'what you use of your limits now' },
);

export const UsageList = Type.Object({ usage: Type.Array(UsageHour), storage: Storage, limits: Limits, now: UsageNow });
export type UsageList = Static<typeof UsageList>;
