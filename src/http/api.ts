/**
 * `/api/v1beta`: the REST API proper. Every route is behind the auth hook (a Bearer key, or the
 * console's session cookie with its CSRF check), then the per-caller rate limit; the shared
 * error answers and the security requirement are added to every route's schema here, once,
 * instead of in each route.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../shared/config.js';
import { PgError } from '../shared/errors.js';
import { FailureThrottle } from '../shared/throttle.js';
import { installAuth } from './auth.js';
import { installUsageMetering } from './metering.js';
import { accountRoutes } from './routes/account.js';
import { connectionRoutes } from './routes/connection.js';
import { repoRoutes } from './routes/repos.js';
import { keyRoutes } from './routes/keys.js';
import { queryRoutes, type QueryDeps } from './routes/query.js';
import { queriesRoutes } from './routes/queries.js';
import { importRoutes } from './routes/import.js';
import { eventRoutes } from './routes/events.js';
import { usageRoutes } from './routes/usage.js';
import { RunningQueries, type QueryCancelPeers } from './running-queries.js';
import { ErrorBody } from './schemas.js';
import type { RolePools } from '../upstream/role-pools.js';

export interface ApiDeps extends Omit<QueryDeps, 'maxRows' | 'running' | 'resultTtlMs'> {
  /** The other worker processes, which may run the query a `POST /query/<id>/cancel` names. */
  queryCancelPeers?: QueryCancelPeers | undefined;
  /** pg pools per role: uploads stream COPY through them. */
  pools: RolePools;
  config: Pick<
    Config,
    | 'maxResultRows'
    | 'rateLimitMax'
    | 'rateLimitWindowMs'
    | 'importMaxBytes'
    | 'importAsyncBytes'
    | 'signup'
    | 'cookieSecure'
    | 'publicHost'
    | 'publicPgPort'
    | 'serviceDatabase'
    | 'host'
    | 'asyncResultTtlMs'
  >;
  /** The port the wire front end listens on, for `GET /connection`. */
  wirePort: number;
  /** A user's wire connections, for `GET /usage/`: on every worker when there are several. */
  connectionsOf?: ((user: string) => number | Promise<number>) | undefined;
}

/** SQLSTATE of the rate limit: Postgres' "configuration limit exceeded", answered as 429. */
const RATE_LIMITED = '53400';

/** The `/api/v1beta` plugin. */
export const api: FastifyPluginAsyncTypebox<ApiDeps> = async (app, deps) => {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as Record<string, unknown>;
    // Routes that take no caller (sign-up, log-in, log-out) need no credentials.
    schema.security = (route.config?.auth ?? 'required') === 'required' ? [{ bearer: [] }] : [];
    schema.response = { '4xx': ErrorBody, '5xx': ErrorBody, ...(schema.response as object | undefined) };
  });
  installAuth(app, deps.control, { cookieSecure: deps.config.cookieSecure });
  installUsageMetering(app, deps.control);
  // Registered after the auth hook: the limit counts per user, all their keys and console
  // sessions together (keys can be minted at will: a limit per key would be none); requests
  // without a caller (log-in, sign-up) count per client address.
  await app.register(rateLimit, {
    max: deps.config.rateLimitMax,
    timeWindow: deps.config.rateLimitWindowMs,
    keyGenerator: (req) => (req.principal ? req.principal.user : `@${req.ip}`),
    errorResponseBuilder: (_req, ctx) =>
      new PgError(RATE_LIMITED, `rate limit exceeded: at most ${ctx.max} requests per ${deps.config.rateLimitWindowMs / 1000} s for one user`, {
        hint: `retry in ${ctx.after} (see the Retry-After header)`,
      }),
  });
  await app.register(accountRoutes, { control: deps.control, config: deps.config, throttle: new FailureThrottle() });
  await app.register(connectionRoutes, { config: deps.config, wirePort: deps.wirePort });
  await app.register(repoRoutes, { control: deps.control });
  await app.register(keyRoutes, { control: deps.control });
  await app.register(usageRoutes, { control: deps.control, connectionsOf: deps.connectionsOf });
  const { control, policy, pools, types, sessions, sessionSettings, queries } = deps;
  const running = new RunningQueries(deps.queryCancelPeers);
  const resultTtlMs = deps.config.asyncResultTtlMs;
  await app.register(queryRoutes, { control, policy, sessions, sessionSettings, types, maxRows: deps.config.maxResultRows, running, queries, resultTtlMs });
  await app.register(queriesRoutes, { queries, resultTtlMs });
  await app.register(importRoutes, { control, pools, config: deps.config });
  // Counted by the rate limit once, when opened: the stream is one request however long it lasts.
  await app.register(eventRoutes, { control });
};
