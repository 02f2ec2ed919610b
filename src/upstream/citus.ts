/**
 * Citus, when the upstream is a Citus coordinator with schema-based sharding: every repo schema
 * is a distributed schema whose tables live whole on one worker. What repobase does differently
 * there is decided here.
 */
import type pg from 'pg';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** Whether the upstream database has the `citus` extension (it is then a coordinator). */
export async function hasCitus(db: Queryable): Promise<boolean> {
  const res = await db.query("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'");
  return (res.rowCount ?? 0) > 0;
}
