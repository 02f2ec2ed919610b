/**
 * `/api/v1beta`: the REST API proper. Every route is behind the bearer key check, then the
 * per-key rate limit; the shared error answers and the security requirement are added to every
 * route's schema here, once, instead of in each route.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../shared/config.js';
import { PgError } from '../shared/errors.js';
import { installAuth } from './auth.js';
import { repoRoutes } from './routes/repos.js';
import { keyRoutes } from './routes/keys.js';
import { queryRoutes, type QueryDeps } from './routes/query.js';
import { importRoutes } from './routes/import.js';
import { ErrorBody } from './schemas.js';
import type { RolePools } from '../upstream/role-pools.js';

export interface ApiDeps extends Omit<QueryDeps, 'maxRows'> {
  /** pg pools per role: uploads stream COPY through them. */
  pools: RolePools;
  config: Pick<Config, 'maxResultRows' | 'rateLimitMax' | 'rateLimitWindowMs' | 'importMaxBytes' | 'importAsyncBytes'>;
}

/** SQLSTATE of the rate limit: Postgres' "configuration limit exceeded", answered as 429. */
const RATE_LIMITED = '53400';

/** The `/api/v1beta` plugin. */
export const api: FastifyPluginAsyncTypebox<ApiDeps> = async (app, deps) => {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as Record<string, unknown>;
    schema.security = [{ bearer: [] }];
    schema.response = { '4xx': ErrorBody, '5xx': ErrorBody, ...(schema.response as object | undefined) };
  });
  installAuth(app, deps.control);
  // Registered after the auth hook: the limit counts per API key, on authenticated requests only.
  await app.register(rateLimit, {
    max: deps.config.rateLimitMax,
    timeWindow: deps.config.rateLimitWindowMs,
    keyGenerator: (req) => req.principal?.keyId ?? req.ip,
    errorResponseBuilder: (_req, ctx) =>
      new PgError(RATE_LIMITED, `rate limit exceeded: at most ${ctx.max} requests per ${deps.config.rateLimitWindowMs / 1000} s with one API key`, {
        hint: `retry in ${ctx.after} (see the Retry-After header)`,
      }),
  });
  await app.register(repoRoutes, { control: deps.control });
  await app.register(keyRoutes, { control: deps.control });
  const { control, policy, pools, types, sessions, sessionSettings } = deps;
  await app.register(queryRoutes, { control, policy, sessions, sessionSettings, types, maxRows: deps.config.maxResultRows });
  await app.register(importRoutes, { control, pools, config: deps.config });
};
