/**
 * The HTTP front end: fastify with the service's logger. Routes of the REST API register here.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ControlPlane } from '../control/control-plane.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { healthRoutes } from './routes/health.js';

export interface AppDeps {
  config: Config;
  control: ControlPlane;
  log: Logger;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log.child({ mod: 'http' }) as FastifyBaseLogger,
    disableRequestLogging: false,
    requestIdHeader: 'x-request-id',
  });
  await app.register(healthRoutes, { control: deps.control });
  return app;
}
