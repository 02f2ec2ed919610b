/**
 * The HTTP front end: fastify with the service's logger, TypeBox schemas, the one error handler,
 * security headers on every answer (security-headers.ts), the OpenAPI document
 * (`/api/openapi.json`, docs at `/api/docs`), the REST API under `/api/v1beta` and the web
 * console at `/`.
 *
 * Every request runs the hooks registered here and in api.ts: each one is work on the REST hot
 * path, so each is a synchronous hook where it can be (an async one costs a promise per request)
 * and allocates nothing it does not need.
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ControlPlane } from '../control/control-plane.js';
import type { Policy } from '../policy/index.js';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';
import { lazyChild, type Logger } from '../shared/logger.js';
import { TypeCatalog } from '../upstream/query-types.js';
import { restSessionSettings, type RolePools } from '../upstream/role-pools.js';
import type { SessionPool } from '../upstream/session-pool.js';
import { api } from './api.js';
import type { AsyncQueries } from './async-queries.js';
import { CONSOLE_DIR, consolePages, registerConsole } from './console.js';
import { installErrorHandling } from './errors.js';
import type { QueryCancelPeers } from './running-queries.js';
import { healthRoutes } from './routes/health.js';
import { API_HEADERS, isApiAnswer, PAGE_HEADERS } from './security-headers.js';
import { installHttpMetrics } from '../observe/http.js';
import type { MetricsSource } from '../observe/metrics-server.js';
import { metricsRoutes } from './routes/metrics.js';

export interface AppDeps {
  config: Config;
  control: ControlPlane;
  log: Logger;
  policy: Policy;
  pools: RolePools;
  /** Raw upstream sessions for `POST /query/` (see upstream/query-run.ts). */
  sessions: SessionPool;
  /** Async queries and the query history (`POST /query/` with async, `/queries/`). */
  queries: AsyncQueries;
  /** The port the wire front end listens on, shown by `GET /connection`; default: config `pgPort`. */
  wirePort?: number;
  /** The built web console; default: `dist/web` of the package. */
  consoleDir?: string;
  /** A user's wire connections (`GET /usage/`): on every worker when there are several. */
  connectionsOf?: (user: string) => number | Promise<number>;
  /** The other worker processes, for REST query cancels that reach another worker than the query. */
  queryCancelPeers?: QueryCancelPeers | undefined;
  /**
   * True once the service drains before stopping: `/healthz` answers 503, and so does every new
   * request (57P03, the connection closed after it), while requests already running finish.
   */
  draining?: () => boolean;
  /** Serves `GET /metrics` from this source when set (config `metricsPort` 0: on the HTTP port). */
  metrics?: MetricsSource | undefined;
}

/** Builds the HTTP front end (routes registered, not listening); the caller listens and closes it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log.child({ mod: 'http' }) as FastifyBaseLogger,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    bodyLimit: deps.config.httpBodyLimitBytes,
    routerOptions: { ignoreTrailingSlash: true },
    // Stopping must not wait for keep-alive timeouts: a browser's or fetch's spare connection
    // that never sent a request is not "idle" to Node and would hold close() for 72 s.
    forceCloseConnections: true,
    // Each request's logger (with its reqId) is made when it first writes a line.
    childLoggerFactory: (logger, bindings, options) => (Object.keys(options).length ? logger.child(bindings, options) : lazyChild(logger as Logger, bindings)),
  }).withTypeProvider<TypeBoxTypeProvider>();
  const draining = deps.draining ?? (() => false);
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    reply.headers(isApiAnswer(req.url) ? API_HEADERS : PAGE_HEADERS);
    if (draining() && req.url !== '/healthz') {
      reply.header('connection', 'close');
      return done(new PgError(SqlState.CannotConnectNow, 'the service is shutting down', { hint: 'retry on another instance, or once it is back' }));
    }
    done();
  });
  installHttpMetrics(app);
  const consoleDir = deps.consoleDir ?? CONSOLE_DIR;
  installErrorHandling(app, consolePages(consoleDir));
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'repobase REST API',
        version: 'v1beta',
        description:
          'SQL repos over HTTP. Authenticate with "Authorization: Bearer <API key>". The web console uses the session cookie of POST /api/v1beta/auth/login instead, and sends its CSRF token in the X-CSRF-Token header on every change.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API key, rb_<id>_<secret>' } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/api/docs' });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(healthRoutes, { control: deps.control, draining });
  if (deps.metrics) await app.register(metricsRoutes, { metrics: deps.metrics });
  await app.register(api, {
    prefix: '/api/v1beta',
    config: deps.config,
    control: deps.control,
    policy: deps.policy,
    pools: deps.pools,
    sessions: deps.sessions,
    queries: deps.queries,
    sessionSettings: restSessionSettings(),
    types: new TypeCatalog(deps.control.admin),
    wirePort: deps.wirePort ?? deps.config.pgPort,
    queryCancelPeers: deps.queryCancelPeers,
    connectionsOf: deps.connectionsOf,
  });
  await registerConsole(app, consoleDir);
  return app;
}
