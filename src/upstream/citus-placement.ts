/**
 * Where a repo goes on Citus: with its owner's other repos, so that joins among them run.
 *
 * Citus places a distributed schema when its first table is created, but which node that is was
 * fixed when the schema was made: the first table of an empty schema goes to the worker picked by
 * the schema's colocation id (see `REPO_NODES`), and that id is the next value of
 * `pg_dist_colocationid_seq` at `CREATE SCHEMA`. So a repo is placed at its creation
 * (`aimNewRepo`): in the creating transaction the service draws from that sequence (fewer values
 * than there are workers) until the id the schema will get picks its owner's node. The first
 * table then lands there by whatever route it comes — CREATE TABLE, `… AS`, an upload, a
 * transaction over the wire — with nothing to move, so no join of it is ever refused for being
 * elsewhere. Citus' own tests place distributed schemas the same way (by the sequence).
 *
 * A placeholder table would not do: dropping a schema's last table makes it empty again, and its
 * next first table goes by the colocation id, wherever the placeholder was moved.
 *
 * Where the aim cannot hold — a repo made before this, a worker added or removed while a repo is
 * empty, another colocation group made by someone else in between — `placeRepo` moves the repo
 * once it has a table (driven by the schema events), and joins are refused until it is done.
 */
import type pg from 'pg';
import { moveRepo, PLACEMENT_WORKERS, REPO_NODES, repoNode, type NodeAddress } from './citus.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * `owner`'s node: the one holding most of their repos other than `except` (ties: the oldest
 * repo's); without any placed, the one most of their empty repos will go to, unless `placedOnly`.
 * Undefined when there is none.
 */
async function ownerNode(db: Queryable, owner: string, opts: { except?: string; placedOnly?: boolean } = {}): Promise<NodeAddress | undefined> {
  const res = await db.query<{ host: string; port: number }>(
    `SELECT host, port FROM (${REPO_NODES}) r
      WHERE owner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1) AND schema <> $2 AND host IS NOT NULL AND (placed OR NOT $3)
      GROUP BY host, port
      ORDER BY count(*) FILTER (WHERE placed) DESC, count(*) DESC, min(schemaid)
      LIMIT 1`,
    [owner, opts.except ?? '', opts.placedOnly ?? false],
  );
  return res.rows[0];
}

/** Where a repo's tables are, or where its first table will go. */
export async function plannedNode(db: Queryable, schema: string): Promise<NodeAddress | undefined> {
  const res = await db.query<{ host: string; port: number }>(`SELECT host, port FROM (${REPO_NODES}) r WHERE schema = $1 AND host IS NOT NULL`, [schema]);
  return res.rows[0];
}

/**
 * Call in the transaction that creates a repo of `owner`, right before its `CREATE SCHEMA`: sets
 * the colocation id sequence so that the new schema is placed on the owner's node, and returns
 * that node. Undefined, with nothing done, for an owner's first repo (Citus' round robin spreads
 * users over the workers) or an admin role that may not draw from the sequence (not superuser).
 * Repo creations take turns (a lock held to the end of the transaction), so two instances
 * creating repos at once do not take each other's ids.
 */
export async function aimNewRepo(db: Queryable, owner: string): Promise<NodeAddress | undefined> {
  const allowed = await db.query<{ ok: boolean }>("SELECT pg_catalog.has_sequence_privilege('pg_catalog.pg_dist_colocationid_seq', 'USAGE') AS ok");
  if (!allowed.rows[0]?.ok) return undefined;
  await db.query("SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('repobase.new-repo'))");
  const home = await ownerNode(db, owner);
  if (home === undefined) return undefined;
  // How many ids to skip so that the next one, modulo the workers, is the home node's index.
  const res = await db.query<{ skip: number }>(
    `WITH workers AS (${PLACEMENT_WORKERS}),
     seq AS (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS next FROM pg_catalog.pg_dist_colocationid_seq)
     SELECT ((i - next % n + n) % n)::int AS skip FROM workers, seq WHERE nodename = $1 AND nodeport = $2`,
    [home.host, home.port],
  );
  const skip = res.rows[0]?.skip;
  if (skip === undefined) return undefined; // the home node takes no new shards (being drained)
  if (skip > 0) await db.query("SELECT pg_catalog.nextval('pg_catalog.pg_dist_colocationid_seq') FROM pg_catalog.generate_series(1, $1)", [skip]);
  return home;
}

/**
 * The fallback: once a repo has tables, moves it to its owner's node if it is elsewhere.
 * Serialised per repo across instances (each hears the same event); the instance that gets the
 * lock does it, the others skip.
 */
export async function placeRepo(admin: pg.Pool, schema: string): Promise<NodeAddress | undefined> {
  const client = await admin.connect();
  try {
    const lock = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtext('repobase.place'), hashtext($1)) AS ok", [schema]);
    if (!lock.rows[0]?.ok) return undefined;
    try {
      const owner = await client.query<{ owner: string }>('SELECT pg_catalog.pg_get_userbyid(nspowner) AS owner FROM pg_catalog.pg_namespace WHERE nspname = $1', [schema]);
      const name = owner.rows[0]?.owner;
      if (name === undefined) return undefined;
      // Only placed repos count here: two new repos moving towards each other's planned node would swap.
      const home = await ownerNode(client, name, { except: schema, placedOnly: true });
      const here = await repoNode(client, schema);
      if (home === undefined || here === undefined || (home.host === here.host && home.port === here.port)) return undefined;
      await moveRepo(client, schema, home);
      return home;
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtext('repobase.place'), hashtext($1))", [schema]);
    }
  } finally {
    client.release();
  }
}
