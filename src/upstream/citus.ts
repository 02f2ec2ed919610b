/**
 * Citus, when the upstream is a Citus coordinator with schema-based sharding: every repo schema
 * is a distributed schema whose tables live whole on one worker (a "node" here). What repobase
 * does differently there is decided in this module:
 *
 * - **Joins.** Citus runs a join of two distributed schemas only when their tables sit on one
 *   node and `citus.enable_non_colocated_router_query_pushdown` is on: the service turns it on
 *   for its database, and keeps each user's repos together so joins among them run.
 * - **Placement.** Citus places a schema when its first table is created (by colocation group,
 *   round robin), so a repo cannot be placed when it is created. Once a repo has tables, the
 *   service moves it to its owner's node — the one holding most of the owner's other repos —
 *   while it is still small (`placeRepo`, driven by the schema-change events).
 * - **Moves.** `moveRepo` is `citus_schema_move` with writes to the repo blocked for the copy: a
 *   writer sees a pause, not an error. Not by logical replication (writes going on until a short
 *   switch-over): under load, one test run in three lost acknowledged writes that way (Citus
 *   13.2.2; never with writes blocked).
 */
import type pg from 'pg';
import { escapeIdentifier } from 'pg';
import { PgError, SqlState } from '../shared/errors.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** Whether the upstream database has the `citus` extension (it is then a coordinator). */
export async function hasCitus(db: Queryable): Promise<boolean> {
  const res = await db.query("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'");
  return (res.rowCount ?? 0) > 0;
}

/**
 * Cluster settings the service needs on a coordinator, for every new session of its database:
 * joins of distributed schemas stored on one node run there.
 */
export async function prepareCitus(db: Queryable, database: string): Promise<void> {
  await db.query(`ALTER DATABASE ${escapeIdentifier(database)} SET citus.enable_non_colocated_router_query_pushdown TO on`);
}

export interface NodeAddress {
  host: string;
  port: number;
}

export function nodeName(node: NodeAddress): string {
  return `${node.host}:${node.port}`;
}

/** Parses `host:port` (`[v6]:port` too). */
export function parseNode(text: string): NodeAddress {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text.trim());
  const port = Number(m?.[3]);
  if (!m || port < 1 || port > 65535) {
    throw new PgError(SqlState.InvalidParameterValue, `invalid node "${text}": expected host:port`, { hint: '`repobase nodes` lists the nodes' });
  }
  return { host: (m[1] ?? m[2])!, port };
}

/** The node holding a repo's tables; undefined while it has none (Citus has not placed it yet). */
export async function repoNode(db: Queryable, schema: string): Promise<NodeAddress | undefined> {
  const res = await db.query<{ host: string; port: number }>(
    `SELECT s.nodename AS host, s.nodeport AS port
       FROM pg_catalog.pg_dist_schema d
       JOIN pg_catalog.citus_shards s ON s.colocation_id = d.colocationid
      WHERE d.schemaid = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1)
      LIMIT 1`,
    [schema],
  );
  return res.rows[0];
}

/** The node holding most of `owner`'s placed repos other than `except`; undefined when none is placed. */
async function homeNode(db: Queryable, owner: string, except: string): Promise<NodeAddress | undefined> {
  const res = await db.query<{ host: string; port: number }>(
    `SELECT s.nodename AS host, s.nodeport AS port
       FROM pg_catalog.pg_dist_schema d
       JOIN pg_catalog.pg_namespace n ON n.oid = d.schemaid
       JOIN pg_catalog.citus_shards s ON s.colocation_id = d.colocationid
      WHERE pg_catalog.pg_get_userbyid(n.nspowner) = $1 AND n.nspname <> $2
      GROUP BY 1, 2
      ORDER BY count(DISTINCT d.schemaid) DESC, min(d.schemaid)
      LIMIT 1`,
    [owner, except],
  );
  return res.rows[0];
}

/**
 * Moves `schema` to `to` (see the module comment for the mode). Resolves once Citus has moved it;
 * a repo already there is left alone.
 */
export async function moveRepo(db: Queryable, schema: string, to: NodeAddress): Promise<'moved' | 'already there'> {
  const known = await db.query('SELECT 1 FROM pg_catalog.pg_dist_node WHERE nodename = $1 AND nodeport = $2 AND isactive AND shouldhaveshards', [to.host, to.port]);
  if (!known.rowCount) {
    throw new PgError(SqlState.UndefinedObject, `no active worker node ${nodeName(to)}`, { hint: '`repobase nodes` lists the nodes' });
  }
  const from = await repoNode(db, schema);
  if (from === undefined) {
    throw new PgError(SqlState.ObjectNotInPrerequisiteState, `repo "${schema}" has no tables yet, so it is on no node`, { hint: 'Citus places a repo when its first table is created' });
  }
  if (from.host === to.host && from.port === to.port) return 'already there';
  await db.query("SELECT pg_catalog.citus_schema_move($1::regnamespace, $2, $3, 'block_writes')", [escapeIdentifier(schema), to.host, to.port]);
  return 'moved';
}

/**
 * Keeps a repo with its owner's others: once it has tables, moves it to the owner's node if
 * Citus placed it elsewhere. Serialised per repo across instances (each hears the same event);
 * the instance that gets the lock does it, the others skip.
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
      const home = await homeNode(client, name, schema);
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

export interface NodeInfo extends NodeAddress {
  /** `coordinator` or `worker`. */
  role: string;
  active: boolean;
  repos: number;
  bytes: number;
  /** `bytes` for people (`pg_size_pretty`). */
  size: string;
}

/** The cluster's nodes with the repos each holds and their size. */
export async function listNodes(db: Queryable): Promise<NodeInfo[]> {
  const res = await db.query<{ host: string; port: number; role: string; active: boolean; repos: string; bytes: string; size: string }>(
    `SELECT n.nodename AS host, n.nodeport AS port,
            CASE WHEN n.groupid = 0 THEN 'coordinator' ELSE 'worker' END AS role, n.isactive AS active,
            count(DISTINCT c.relnamespace) AS repos, coalesce(sum(s.shard_size), 0) AS bytes,
            pg_catalog.pg_size_pretty(coalesce(sum(s.shard_size), 0)::bigint) AS size
       FROM pg_catalog.pg_dist_node n
       LEFT JOIN pg_catalog.citus_shards s ON s.nodename = n.nodename AND s.nodeport = n.nodeport AND s.citus_table_type = 'schema'
       LEFT JOIN pg_catalog.pg_class c ON c.oid = s.table_name
      WHERE n.noderole = 'primary'
      GROUP BY n.nodeid, n.nodename, n.nodeport, n.groupid, n.isactive
      ORDER BY n.groupid, n.nodename, n.nodeport`,
  );
  return res.rows.map((r) => ({ host: r.host, port: Number(r.port), role: r.role, active: r.active, repos: Number(r.repos), bytes: Number(r.bytes), size: r.size }));
}
