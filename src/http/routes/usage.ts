/**
 * `GET /usage/`: the caller's own usage per hour, and what they keep stored. Only ever the caller's rows: the user comes
 * from the key or session, never from the request.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type, { type Static } from 'typebox';
import type { ControlPlane } from '../../control/control-plane.js';
import { parseSince } from '../../control/since.js';
import { fullPrincipalOf } from '../auth.js';

const Count = (description: string) => Type.Integer({ minimum: 0, description });

export const UsageQuery = Type.Object({
  since: Type.Optional(Type.String({ description: 'from the hour holding this time: ISO 8601 (2026-11-24T05:00:00Z) or a span back from now (30m, 1h, 7d, 2w); default: everything kept' })),
});

export const UsageHour = Type.Object({
  hour: Type.String({ format: 'date-time', description: 'start of the hour (UTC)' }),
  statements: Count('statements that completed'),
  rows_returned: Count('rows returned to the client (wire: from the command tags of SELECT, FETCH, COPY TO and RETURNING; REST: the rows of the answers)'),
  bytes_in: Count('bytes received: wire protocol bytes from the client, REST request bodies'),
  bytes_out: Count('bytes sent: wire protocol bytes to the client, REST answers with their headers'),
  upload_bytes: Count('bytes of files uploaded (POST /import/)'),
});

export const Storage = Type.Object(
  {
    repo_bytes: Count('bytes of the tables, indexes and materialized views in your repos'),
    large_objects: Count('large objects you own (the lo_* functions of libpq, pgjdbc LargeObjectManager)'),
    large_object_bytes: Type.Union([Count('their bytes'), Type.Null()], { description: 'their bytes; null where the service may not read pg_largeobject' }),
  },
  { description: 'what you keep stored now, read live' },
);

export const UsageList = Type.Object({ usage: Type.Array(UsageHour), storage: Storage });
export type UsageList = Static<typeof UsageList>;

/** Routes under `/usage/`. */
export const usageRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get(
    '/usage/',
    {
      schema: {
        summary: 'your usage per hour, oldest first',
        description: 'Counts are written every few seconds: the current hour may lag a little behind.',
        tags: ['usage'],
        querystring: UsageQuery,
        response: { 200: UsageList },
      },
    },
    async (req) => {
      const since = req.query.since === undefined ? undefined : parseSince(req.query.since);
      const { user } = fullPrincipalOf(req, "reading the account's usage");
      const [rows, storage] = await Promise.all([control.usageRows({ user, since }), control.storage(user)]);
      return {
        storage: { repo_bytes: storage.repoBytes, large_objects: storage.largeObjects, large_object_bytes: storage.largeObjectBytes },
        usage: rows.map((r) => ({
          hour: r.hour.toISOString(),
          statements: r.statements,
          rows_returned: r.rowsReturned,
          bytes_in: r.bytesIn,
          bytes_out: r.bytesOut,
          upload_bytes: r.uploadBytes,
        })),
      };
    },
  );
};
