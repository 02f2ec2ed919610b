import type { FastifyPluginAsync } from 'fastify';
import type { ControlPlane } from '../../control/control-plane.js';

const HEALTH_TIMEOUT_MS = 2_000;

/**
 * `GET /healthz`: no auth; 200 when the upstream answers and the control plane is ready, 503
 * otherwise — and 503 at once while the service drains before stopping, so that a load balancer
 * sends it nothing new.
 */
export const healthRoutes: FastifyPluginAsync<{ control: ControlPlane; draining: () => boolean }> = async (app, { control, draining }) => {
  app.get('/healthz', async (req, reply) => {
    if (draining()) return reply.code(503).send({ status: 'unavailable', reason: 'shutting down' });
    // Reached but not yet migrated (an upstream that was down at start-up, just back): not serving.
    if (!control.isReady) return reply.code(503).send({ status: 'unavailable', reason: 'starting: the control plane is not ready yet' });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS);
    });
    try {
      await Promise.race([control.admin.query('SELECT 1'), timeout]);
      return { status: 'ok' };
    } catch (err: unknown) {
      req.log.warn({ err }, 'health check: upstream does not answer');
      return reply.code(503).send({ status: 'unavailable', reason: 'upstream Postgres does not answer' });
    } finally {
      clearTimeout(timer);
    }
  });
};
