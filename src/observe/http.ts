/**
 * The HTTP front end's request metrics, as a fastify hook on the whole app: every answered
 * request by route pattern and status, with its duration. Error answers are counted by origin
 * and SQLSTATE class where their body is written, by the one error handler (http/errors.ts):
 * a hook here would run on every answer to find the few that are errors.
 */
import type { FastifyInstance } from 'fastify';
import { countHttpRequest } from './metrics.js';

/** Adds the hook to `app` (before its plugins are registered, so that it applies to every route). */
export function installHttpMetrics(app: FastifyInstance): void {
  app.addHook('onResponse', (req, reply, done) => {
    countHttpRequest(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
