/**
 * `GET /connection`: where clients connect, for the console's Connect dialog. Behind a load
 * balancer or a proxy the operator names the public host and port (`publicHost`,
 * `publicPgPort`); otherwise the host is the one the caller used to reach this server and the
 * port the one the wire front end listens on.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../shared/config.js';
import { hostHeader, hostName } from '../origin.js';
import { ConnectionInfo } from '../schemas.js';

export interface ConnectionDeps {
  config: Pick<Config, 'publicHost' | 'publicPgPort' | 'serviceDatabase' | 'host'>;
  /** The port the wire front end actually listens on (config `pgPort` may be 0: any free port). */
  wirePort: number;
}

/** The `/connection` route. */
export const connectionRoutes: FastifyPluginAsyncTypebox<ConnectionDeps> = async (app, { config, wirePort }) => {
  app.get(
    '/connection',
    { schema: { summary: 'host, port and database for Postgres clients, and the REST base URL', tags: ['account'], response: { 200: ConnectionInfo } } },
    async (req) => {
      // HTTP/1.1 clients always send Host (Node refuses requests without it); the bind address is a last resort.
      const host = hostHeader(req) || (config.host.includes(':') ? `[${config.host}]` : config.host);
      return {
        // A bare host name (IPv6 without brackets), as libpq's host parameter takes it.
        pg_host: config.publicHost || hostName(host),
        pg_port: config.publicPgPort || wirePort,
        api_url: `${req.protocol}://${host}/api/v1beta`,
        service_database: config.serviceDatabase,
      };
    },
  );
};
