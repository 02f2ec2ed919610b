/**
 * What a user keeps stored, read live from the cluster: the bytes of the tables, indexes and
 * materialized views in their repos, and the large objects their role owns (large objects live
 * outside any repo, in `pg_largeobject`, private to their owner by Postgres' own rule).
 */
import { query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migrations.js';

export interface Storage {
  /** Bytes of the relations in the user's repos, with their indexes and TOAST. */
  repoBytes: number;
  largeObjects: number;
  /** Bytes of the user's large objects; null where the admin role may not read `pg_largeobject`. */
  largeObjectBytes: number | null;
}

/** `user`'s storage; zeros for a user with nothing stored. */
export async function storageOf(db: Queryable, user: string): Promise<Storage> {
  const res = await query<{ repo_bytes: string; large_objects: string; readable: boolean }>(
    db,
    `SELECT (SELECT coalesce(sum(pg_catalog.pg_total_relation_size(c.oid)), 0)
               FROM pg_catalog.pg_class c
               JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
               JOIN ${CONTROL_SCHEMA}.repos r ON n.nspname = r.owner || '/' || r.name
              WHERE r.owner = $1 AND c.relkind IN ('r', 'm')) AS repo_bytes,
            (SELECT count(*) FROM pg_catalog.pg_largeobject_metadata m JOIN pg_catalog.pg_roles o ON o.oid = m.lomowner WHERE o.rolname = $1) AS large_objects,
            pg_catalog.has_table_privilege('pg_catalog.pg_largeobject', 'SELECT') AS readable`,
    [user],
  );
  const row = res.rows[0]!;
  const largeObjects = Number(row.large_objects);
  // Privileges are checked for every table a query names, taken branch or not: a second query.
  let largeObjectBytes: number | null = null;
  if (row.readable) {
    largeObjectBytes = 0;
    if (largeObjects > 0) {
      const bytes = await query<{ bytes: string }>(
        db,
        `SELECT coalesce(sum(pg_catalog.octet_length(l.data)), 0) AS bytes
           FROM pg_catalog.pg_largeobject l
          WHERE l.loid IN (SELECT m.oid FROM pg_catalog.pg_largeobject_metadata m JOIN pg_catalog.pg_roles o ON o.oid = m.lomowner WHERE o.rolname = $1)`,
        [user],
      );
      largeObjectBytes = Number(bytes.rows[0]!.bytes);
    }
  }
  return { repoBytes: Number(row.repo_bytes), largeObjects, largeObjectBytes };
}
