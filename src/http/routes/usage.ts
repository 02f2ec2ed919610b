/**
 * `GET /usage/`: the caller's own usage per hour, what they keep stored, their limits and what
 * they use of them now. Only ever the caller's rows: the user comes from the key or session,
 * never from the request.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { ControlPlane } from '../../control/control-plane.js';
import { parseSince } from '../../control/since.js';
import { fullPrincipalOf } from '../auth.js';
import { UsageList } from '../schemas.js';

const HOUR_MS = 3_600_000;

export const UsageQuery = Type.Object({
  since: Type.Optional(Type.String({ description: 'from the hour holding this time: ISO 8601 (2026-11-24T05:00:00Z) or a span back from now (30m, 1h, 7d, 2w); default: everything kept' })),
});

export interface UsageDeps {
  control: ControlPlane;
  /** The user's wire connections open on this service (every worker). */
  connectionsOf?(user: string): number | Promise<number>;
}

/** Routes under `/usage/`. */
export const usageRoutes: FastifyPluginAsyncTypebox<UsageDeps> = async (app, { control, connectionsOf }) => {
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
      const queuedSince = new Date(Math.floor(Date.now() / HOUR_MS) * HOUR_MS - HOUR_MS);
      const [rows, storage, recent, active, connections] = await Promise.all([control.usageRows({ user, since }), control.storage(user), control.usageRows({ user, since: queuedSince }), control.tenancy.openTransactions(user), connectionsOf?.(user) ?? 0]);
      const limits = control.limits.of(user);
      return {
        storage: { repo_bytes: storage.repoBytes, large_objects: storage.largeObjects, large_object_bytes: storage.largeObjectBytes },
        limits: {
          connections: limits.connections,
          active: limits.active,
          statement_timeout_ms: limits.statementTimeoutMs,
          idle_in_transaction_timeout_ms: limits.idleInTransactionTimeoutMs,
          storage_bytes: limits.storageBytes,
          time_budget_ms: limits.timeBudgetMs,
        },
        now: {
          wire_connections: connections,
          active_transactions: active,
          queued_ms: recent.reduce((sum, r) => sum + r.queuedMs, 0),
          queued_since: queuedSince.toISOString(),
        },
        usage: rows.map((r) => ({
          hour: r.hour.toISOString(),
          statements: r.statements,
          rows_returned: r.rowsReturned,
          bytes_in: r.bytesIn,
          bytes_out: r.bytesOut,
          upload_bytes: r.uploadBytes,
          queued_ms: r.queuedMs,
        })),
      };
    },
  );
};
