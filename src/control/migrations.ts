/**
 * Versioned migrations of the control plane schema. Applied at start-up under an advisory lock,
 * so instances starting at once apply each migration exactly once.
 */
import type pg from 'pg';
import { loadModule, parseSync } from 'libpg-query';
import { hasCitus, prepareCitus } from '../upstream/citus.js';
import { KEY_EVENT_TRIGGERS } from './key-triggers.js';
import { inTransaction, query, type Queryable } from './db.js';
import { CONTROL_SCHEMA, MIGRATIONS, SCHEMA_EVENT_TRIGGERS } from './migration-list.js';

export { CONTROL_SCHEMA, SCHEMA_EVENT_CHANNEL } from './migration-list.js';

/** Whether this database has the event triggers that let write keys change structure (they need a superuser to create). */
export async function keyDdlInstalled(db: Queryable): Promise<boolean> {
  const res = await query<{ n: number }>(db, "SELECT count(*)::int AS n FROM pg_catalog.pg_event_trigger WHERE evtname = ANY($1) AND evtenabled <> 'D'", [[...KEY_EVENT_TRIGGERS]]);
  return res.rows[0]?.n === KEY_EVENT_TRIGGERS.length;
}

/** Whether this database has the event triggers of live schema events (they need a superuser to create). */
export async function schemaEventsInstalled(db: Queryable): Promise<boolean> {
  const res = await query<{ n: number }>(db, "SELECT count(*)::int AS n FROM pg_catalog.pg_event_trigger WHERE evtname = ANY($1) AND evtenabled <> 'D'", [[...SCHEMA_EVENT_TRIGGERS]]);
  return res.rows[0]?.n === SCHEMA_EVENT_TRIGGERS.length;
}

/**
 * The statements of a migration, to be sent one by one: Citus propagates some DDL to its workers
 * (`REVOKE … ON DATABASE`, roles, grants), which it cannot do from inside a multi-statement query.
 * Split by the server's own grammar, so function bodies and comments stay whole.
 */
async function statementsOf(sql: string): Promise<string[]> {
  await loadModule();
  const bytes = Buffer.from(sql);
  const tree = parseSync(sql) as { stmts?: { stmt_location?: number; stmt_len?: number }[] };
  return (tree.stmts ?? []).map(({ stmt_location: start = 0, stmt_len: length }) => bytes.subarray(start, length ? start + length : undefined).toString());
}

/** Applies every migration not yet applied; returns the versions it applied. */
export async function migrate(admin: pg.Pool): Promise<number[]> {
  return inTransaction(admin, async (client) => {
    // Transaction-scoped: released at COMMIT/ROLLBACK even if this process dies.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('repobase.migrations'))");
    // On Citus the service's own schemas stay local tables of the coordinator, never distributed
    // schemas on a worker (as every repo becomes).
    const citus = await hasCitus(client);
    if (citus) await client.query('SET LOCAL citus.enable_schema_based_sharding TO off');
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${CONTROL_SCHEMA}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${CONTROL_SCHEMA}.migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = await client.query<{ version: number }>(`SELECT version FROM ${CONTROL_SCHEMA}.migrations`);
    const applied = new Set(done.rows.map((r) => r.version));
    const db = await client.query<{ name: string }>('SELECT current_database() AS name');
    const database = db.rows[0]!.name;
    const now: number[] = [];
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      for (const statement of await statementsOf(m.sql(database))) await client.query(statement);
      await client.query(`INSERT INTO ${CONTROL_SCHEMA}.migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      now.push(m.version);
    }
    if (citus) await prepareCitus(client, database);
    return now;
  });
}
