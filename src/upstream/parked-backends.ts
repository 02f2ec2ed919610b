/**
 * Which of the service's backends use no CPU now (the fair queue's parked slots: admission.ts).
 */
import type pg from 'pg';

/**
 * The query that tells which of the service's backends use no CPU now: idle (a pinned client
 * between transactions, a session-mode client), idle inside a transaction, or waiting on a lock,
 * a timeout (`pg_sleep`), their client, an extension (Citus waiting for its workers) or a buffer
 * pin. Read by the admin role, which sees every role's sessions (as a superuser, a member of
 * `pg_read_all_stats`, or a member of the user roles).
 */
const PARKED_BACKENDS_SQL = `SELECT pid FROM pg_catalog.pg_stat_activity
 WHERE backend_type = 'client backend' AND datname = pg_catalog.current_database()
   AND (state IN ('idle', 'idle in transaction', 'idle in transaction (aborted)')
        OR wait_event_type IN ('Lock', 'Timeout', 'Client', 'Extension', 'BufferPin'))`;

/** The process ids of the backends that use no CPU now. */
export async function parkedBackends(admin: pg.Pool): Promise<ReadonlySet<number>> {
  return new Set((await admin.query<{ pid: number }>(PARKED_BACKENDS_SQL)).rows.map((r) => r.pid));
}
