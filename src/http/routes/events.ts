/**
 * `GET /events`: live schema events as Server-Sent Events, for the console's open pages (and any
 * client): a change made anywhere to a repo the caller may read reaches them within a moment.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { ControlPlane } from '../../control/control-plane.js';
import type { Logger } from '../../shared/logger.js';
import { principalOf } from '../auth.js';
import { openSchemaStream } from '../live-schema.js';
import { SchemaEvent } from '../schemas.js';

/** Time between keep-alive comments: well below the idle timeouts of common proxies (60 s). */
const KEEP_ALIVE_MS = 15_000;
/** How soon an EventSource reconnects after the stream breaks. */
const RETRY_MS = 1000;

/** Routes under `/events`. */
export const eventRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get(
    '/events',
    {
      schema: {
        summary: 'live schema events (Server-Sent Events)',
        description:
          'A text/event-stream that stays open: "retry: 1000", then for every schema change of a repo you may read at that moment (DDL by anyone, by any path: wire, REST, uploads, functions) an "event: schema" whose "data" is one JSON line {"repo","table","command"} (table null for the repo itself or non-table objects), and a comment line every 15 s. Use EventSource (the session cookie is sent) or any HTTP client with a Bearer key.',
        tags: ['events'],
        response: {
          200: {
            description: 'the event stream; each data line is a SchemaEvent',
            content: { 'text/event-stream': { schema: SchemaEvent } },
          },
        },
      },
    },
    async (req, reply) => {
      const stream = openSchemaStream(control, principalOf(req), req.log as Logger, { keepAliveMs: KEEP_ALIVE_MS, retryMs: RETRY_MS });
      // The 200 schema documents each event's data; the answer itself is the stream.
      const raw: FastifyReply = reply;
      return raw
        .type('text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache, no-store, no-transform')
        // nginx (and proxies that copy it) would otherwise hold events back in its buffer.
        .header('x-accel-buffering', 'no')
        .send(stream);
    },
  );
};
