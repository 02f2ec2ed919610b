/**
 * `GET /metrics` on the HTTP port (when config `metricsPort` is 0): the Prometheus exposition
 * text, without auth, as scrapers expect. It names no user or repo (see observe/metrics.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import { METRICS_CONTENT_TYPE, type MetricsSource } from '../../observe/metrics-server.js';

export const metricsRoutes: FastifyPluginAsync<{ metrics: MetricsSource }> = async (app, { metrics }) => {
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => reply.type(METRICS_CONTENT_TYPE).send(await metrics()));
};
