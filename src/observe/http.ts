/**
 * The HTTP front end's metrics, as fastify hooks on the whole app: every answered request by
 * route pattern and status with its duration, and every error answer by origin and SQLSTATE
 * class. The SQLSTATE is read from the error body the one error handler wrote (its first
 * member), so the count is of what the client got, Fastify's own errors included.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { countError, countHttpRequest, originOf, type ErrorOrigin } from './metrics.js';

/** The start of every error body: `{"error":{"code":"42501",…`. */
const ERROR_CODE = /^\{"error":\{"code":"([0-9A-Z]{5})"/;

/** Adds the hooks to `app` (before its plugins are registered, so that they apply to every route). */
export function installHttpMetrics(app: FastifyInstance): void {
  const origins = new WeakMap<FastifyRequest, ErrorOrigin>();
  app.addHook('onError', (req, _reply, err, done) => {
    origins.set(req, originOf(err) ?? 'proxy');
    done();
  });
  app.addHook('onSend', (req, reply, payload, done) => {
    if (reply.statusCode >= 400 && typeof payload === 'string') {
      const code = ERROR_CODE.exec(payload)?.[1];
      if (code !== undefined) countError('rest', origins.get(req) ?? 'proxy', code);
    }
    done(null, payload);
  });
  app.addHook('onResponse', (req, reply, done) => {
    countHttpRequest(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
