/**
 * Configuration: `config/default.json` < `REPOBASE_*` environment variables < CLI flags,
 * validated once and frozen. Nothing else in the code reads `process.env` for settings.
 *
 * Each key `fooBar` has the environment variable `REPOBASE_FOO_BAR` and the flag `--foo-bar`.
 */
import Type, { type Static, type TSchema } from 'typebox';
import Value from 'typebox/value';
import { PgError, SqlState } from './errors.js';
import { envName, flagName, readDefaults } from './config-keys.js';

const Port = (description: string) => Type.Integer({ minimum: 0, maximum: 65535, description });
const Positive = (description: string) => Type.Integer({ minimum: 1, description });
const LogLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const ConfigSchema = Type.Object({
  dataDir: Type.String({ minLength: 1, description: 'embedded Postgres data, generated server secret and TLS cert' }),
  host: Type.String({ minLength: 1, description: 'bind address of both front ends' }),
  httpPort: Port('REST API + web UI'),
  pgPort: Port('Postgres wire front end'),
  upstreamUrl: Type.String({ description: 'admin connection URL of an existing cluster; empty = embedded Postgres' }),
  embeddedPgPort: Port('port of the embedded Postgres (loopback only)'),
  secret: Type.String({ description: 'derives upstream role passwords; empty = generated into the data dir' }),
  workers: Type.Integer({
    minimum: 0,
    description: 'processes serving both front ends on the same ports; 0 = one per CPU core but one, at least one. Connection and pool limits are for the whole service, shared evenly',
  }),
  logLevel: Type.Union(LogLevels.map((l) => Type.Literal(l)), { description: 'pino level' }),
  serviceDatabase: Type.String({ minLength: 1, description: 'database name clients connect to (and the database created in the embedded cluster)' }),
  statementTimeoutMs: Positive('statement timeout of every statement, on the wire and over REST, in milliseconds (57014 past it); an admin sets another per user (repobase user limits --statement-timeout)'),
  idleInTransactionTimeoutMs: Type.Integer({
    minimum: 0,
    description: 'a wire client idle inside a transaction this many milliseconds is ended with 25P03 and its transaction rolled back, freeing its backend; 0 = never; an admin sets another per user',
  }),
  drainTimeoutMs: Type.Integer({
    minimum: 0,
    description: 'on SIGTERM/SIGINT, wire transactions and REST requests in flight may finish for this many milliseconds before the service stops; 0 = stop at once',
  }),
  maxStatementBytes: Positive('statements larger than this are refused with 54000 before parsing'),
  upstreamPoolMax: Positive('upstream connections per user role of the REST API (POST /query/ sessions, and the uploads\' connections)'),
  upstreamMaxSessions: Type.Integer({
    minimum: 0,
    description:
      "upstream backends the whole service may hold (wire and REST together; worker processes share it evenly): keep it under Postgres' max_connections with room for the control plane (a few per worker) and an admin; 0 = sized from the cluster at start-up: its max_connections less what is reserved and the control plane's, at most 200",
  }),
  upstreamActiveMax: Type.Integer({
    minimum: 0,
    description:
      'transactions running upstream at once, wire and REST together (worker processes share it evenly); past it transactions wait in per-user queues served fairly; 0 = 4 × the CPU cores of this machine',
  }),
  upstreamNice: Type.Integer({
    minimum: 0,
    maximum: 19,
    description: "steps of CPU weight the service takes over the embedded Postgres' backends (Linux), so that it keeps its share of the CPU under a busy Postgres: it runs at nice -N where it may (root or CAP_SYS_NICE), else the backends at +N; 0 = both as they are. An external cluster is left as it is",
  }),
  heavyUserNice: Type.Integer({
    minimum: 0,
    maximum: 19,
    description:
      "steps of CPU weight a heavy user's embedded Postgres backends lose while another user is active (Linux): a user running more transactions at once than a quarter of upstreamActiveMax (the cores) is heavy until a second after; the others' statements then get a core first. 0 = off. An external cluster is left as it is",
  }),
  userMaxConnections: Type.Integer({ minimum: 0, description: 'wire connections one user may have open at once (worker processes share it evenly); past it 53300; 0 = no limit per user; an admin sets another per user' }),
  userActiveMax: Type.Integer({
    minimum: 0,
    description: "transactions one user may run upstream at once (worker processes share it evenly); past it the user's transactions wait; 0 = no limit of the user's own (the fair share still holds); an admin sets another per user",
  }),
  userStorageQuotaBytes: Type.Integer({
    minimum: 0,
    description: 'bytes one user may keep in their repos and large objects; past it statements that add data fail with 53100 (reading and deleting go on); 0 = no quota; an admin sets another per user',
  }),
  userTimeBudgetMs: Type.Integer({
    minimum: 0,
    description: "milliseconds of upstream time (a backend held for the user's transactions) one user may use per minute before being slowed: past it the user's transactions wait at a quarter of the weight in the fair queue, never refused; 0 = off; an admin sets another per user",
  }),
  storageRefreshMs: Positive('how often each process reads what every user stores, for the storage quota, in milliseconds'),
  upstreamIdleMs: Positive('an idle upstream connection is closed after this many milliseconds'),
  upstreamConnectTimeoutMs: Positive('a new upstream connection must be connected and logged in within this many milliseconds; past it the client gets 08006'),
  upstreamResponseTimeoutMs: Type.Integer({
    minimum: 0,
    description:
      'a wire client\'s upstream session that owes an answer and has passed no byte either way for this many milliseconds is taken as dead (a network that stopped answering): it is closed and the client gets 08006. Set it above the longest statement that sends nothing meanwhile; 0 = never. REST statements always stop waiting one second past statementTimeoutMs',
  }),
  pgTlsCert: Type.String({ description: 'PEM certificate file of the wire front end; empty = a self-signed one generated into the data dir' }),
  pgTlsKey: Type.String({ description: 'PEM private key file matching pgTlsCert' }),
  pgAuthMethod: Type.Union([Type.Literal('scram-sha-256'), Type.Literal('password')], {
    description: 'password exchange the wire front end asks for: scram-sha-256, or password (cleartext; only over TLS, or on loopback when pgCleartextLoopback)',
  }),
  pgCleartextLoopback: Type.Boolean({ description: 'allow the cleartext password method without TLS on loopback connections' }),
  pgMaxConnections: Positive('client connections of the wire front end; more are refused with 53300'),
  pgStartupTimeoutMs: Positive('a wire client must finish start-up and authentication within this many milliseconds'),
  pgSendTimeoutMs: Positive('a wire client that reads nothing of a pending answer for this many milliseconds is closed; its statement is cancelled and its upstream session reset for the next client'),
  pgIdleTimeoutMs: Type.Integer({ minimum: 0, description: 'close wire clients idle (outside a transaction) this long; 0 = never' }),
  pgMaxMessageBytes: Positive('largest protocol message accepted from a wire client (08P01 past it)'),
  pgLargeMessagesBytes: Positive('bytes of large client messages (1 MiB and more) a process reads and judges at once; a client whose large message does not fit waits, its socket paused, until one is done'),
  queuedWarnBytes: Positive("bytes queued on a process' connections (towards Postgres and towards clients, not yet taken) past which it logs a warning, and once more when back under half"),
  pgSessionsPerUser: Positive('upstream backends one user may hold through the wire front end at once; a client past it waits in line for one (53300 after pgPoolTimeoutMs)'),
  pgPoolMode: Type.Union([Type.Literal('transaction'), Type.Literal('session')], {
    description:
      "transaction: a wire client holds a backend only while a transaction (or an extended batch until Sync, or a COPY) runs, its session state carried by the proxy; session: one backend from a client's first statement until it disconnects",
  }),
  pgPoolTimeoutMs: Positive('a wire client waits this many milliseconds at most for a backend when its user\'s (or the service\'s) are all busy; past it, 53300'),
  pgPoolGrowAfterMs: Type.Integer({
    minimum: 0,
    description: "pooling by transaction: a wire client that finds none of its user's backends free waits for one to come back; another is opened for it once it has waited this many milliseconds, at once when none is in use",
  }),
  maxResultRows: Positive('rows one REST query answers at most; a longer result ends with "truncated": true'),
  httpBodyLimitBytes: Positive('largest REST request body in bytes; a larger one is refused with 413 (54000)'),
  rateLimitMax: Positive('REST requests one user may make per rate-limit window, all their keys and console sessions together; more get 429 (53400) with Retry-After'),
  rateLimitWindowMs: Positive('length of the REST rate-limit window, in milliseconds'),
  importMaxBytes: Positive('largest file POST /import/ accepts, in bytes; a larger one is refused with 413 (54000)'),
  importAsyncBytes: Positive('uploads larger than this (by Content-Length) answer 202 with a job at once instead of waiting for the table'),
  signup: Type.Union([Type.Literal('open'), Type.Literal('closed')], {
    description: 'open: anyone may create an account in the web console (POST /api/v1beta/auth/signup); closed: only an admin creates users (repobase user create, then user set-password)',
  }),
  publicHost: Type.String({
    description: 'host name clients use for the Postgres wire front end, shown in connection strings; empty = the host name the browser or client used for the HTTP server',
  }),
  metricsPort: Port('port of a separate HTTP server answering GET /metrics (Prometheus text format, no auth), e.g. one only the scraper reaches; 0 = GET /metrics on the HTTP port'),
  publicPgPort: Port('port clients use for the Postgres wire front end, shown in connection strings (e.g. behind a load balancer); 0 = the port it listens on'),
  auditRetentionDays: Type.Integer({
    minimum: 0,
    description: 'audit log rows older than this many days are deleted (at start and hourly); 0 = kept forever',
  }),
  asyncStatementTimeoutMs: Positive('statement timeout of async queries (POST /query/ with "async": true), in milliseconds'),
  asyncMaxRunning: Positive('async queries one user may have running at once on the whole service; later ones wait, queued'),
  asyncResultTtlMs: Positive('the result of an async query is kept this many milliseconds after the query ends, then deleted'),
  asyncResultMaxBytes: Positive(
    "stored bytes (compressed) of one user's async results; past it the oldest finished results are deleted, and a result that does not fit even so fails with 53400",
  ),
  queryHistoryDays: Type.Integer({
    minimum: 0,
    description: 'queries (POST /query/, async or not) are listed in GET /queries/ for this many days, then deleted; 0 = only async queries are recorded, each kept as long as its result',
  }),
  cookieSecure: Type.Boolean({
    description: 'mark the console session cookie Secure (and accept an https Origin) even when requests arrive over plain HTTP, as behind a TLS-terminating proxy',
  }),
});

export type Config = Readonly<Static<typeof ConfigSchema>>;
export type ConfigKey = keyof Config;

export const configKeys = Object.keys(ConfigSchema.properties) as ConfigKey[];

function describeAllowed(schema: TSchema): string {
  const s = schema as { anyOf?: { const: unknown }[]; type?: string; minimum?: number; maximum?: number; minLength?: number };
  if (s.anyOf) return `one of ${s.anyOf.map((x) => String(x.const)).join(', ')}`;
  if (s.type === 'integer') {
    const range = s.maximum !== undefined ? ` from ${s.minimum} to ${s.maximum}` : s.minimum !== undefined ? ` ≥ ${s.minimum}` : '';
    return `an integer${range}`;
  }
  if (s.type === 'string') return s.minLength ? 'a non-empty string' : 'a string';
  if (s.type === 'boolean') return 'true or false';
  return s.type ?? 'a valid value';
}

/** Environment and flag values are strings; numbers are converted as the schema says. */
function coerce(schema: TSchema, raw: unknown): unknown {
  const s = schema as { type?: string };
  if (typeof raw === 'string' && s.type === 'integer' && /^-?\d+$/.test(raw.trim())) return Number(raw.trim());
  if (typeof raw === 'string' && s.type === 'boolean' && /^(true|false)$/.test(raw.trim())) return raw.trim() === 'true';
  return raw;
}

/**
 * Builds the configuration from the defaults file, the environment and flags (later wins).
 * Throws a PgError naming the offending key, its sources and the allowed values.
 */
export function loadConfig(
  env: Readonly<Record<string, string | undefined>> = {},
  flags: Readonly<Partial<Record<ConfigKey, unknown>>> = {},
  defaults: unknown = readDefaults(),
): Config {
  const merged: Record<string, unknown> = {};
  const source: Record<string, string> = {};
  const base = (defaults ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(base)) {
    if (!(key in ConfigSchema.properties)) {
      throw new PgError(SqlState.InvalidParameterValue, `unknown configuration key "${key}" in config/default.json`);
    }
  }
  for (const key of configKeys) {
    const schema = ConfigSchema.properties[key];
    merged[key] = base[key];
    source[key] = `"${key}" in config/default.json`;
    const fromEnv = env[envName(key)];
    if (fromEnv !== undefined) {
      merged[key] = coerce(schema, fromEnv);
      source[key] = envName(key);
    }
    const fromFlag = flags[key];
    if (fromFlag !== undefined) {
      merged[key] = coerce(schema, fromFlag);
      source[key] = `--${flagName(key)}`;
    }
    if (!Value.Check(schema, merged[key])) {
      const shown = merged[key] === undefined ? 'missing' : JSON.stringify(merged[key]);
      throw new PgError(
        SqlState.InvalidParameterValue,
        `invalid configuration ${source[key]}: ${shown}; expected ${describeAllowed(schema)}`,
        { hint: `${key}: ${(schema as { description?: string }).description ?? ''}` },
      );
    }
  }
  return Object.freeze(merged) as Config;
}
