/**
 * Citus, when the upstream is a Citus coordinator with schema-based sharding: every repo schema
 * is a distributed schema whose tables live whole on one worker (a "node" here). What repobase
 * does differently there is decided in this module and in citus-placement.ts:
 *
 * - **Joins.** Citus runs a join of two distributed schemas only when their tables sit on one
 *   node and `citus.enable_non_colocated_router_query_pushdown` is on: the service turns it on
 *   for its database, and keeps each user's repos together so joins among them run.
 * - **Placement.** Which node an empty repo's first table goes to is fixed when the repo is
 *   created; the service picks its owner's node then (citus-placement.ts).
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

/**
 * The workers that take new shards, each with its index `i` among the `n` of them in the order
 * Citus deals an empty schema's first table out: the table goes to worker `colocationid % n`
 * (Citus' `EmptySingleShardTableColocationDecideNodeId`, over the node list sorted by name and
 * port).
 */
export const PLACEMENT_WORKERS = `
  SELECT nodename, nodeport,
         (row_number() OVER (ORDER BY nodename COLLATE "C", nodeport) - 1)::int AS i, (count(*) OVER ())::int AS n
    FROM pg_catalog.pg_dist_node
   WHERE isactive AND noderole = 'primary' AND shouldhaveshards`;

/**
 * Every distributed schema with the node holding its tables, or for one without tables the node
 * its first table will go to (`placed` false; see `PLACEMENT_WORKERS`). From Citus' metadata
 * tables, which the coordinator reads locally (`citus_shards` would ask every worker for sizes).
 */
export const REPO_NODES = `
  WITH workers AS (${PLACEMENT_WORKERS})
  SELECT ns.nspname AS schema, ns.nspowner AS owner, d.schemaid, here.host IS NOT NULL AS placed,
         coalesce(here.host, planned.nodename) AS host, coalesce(here.port, planned.nodeport) AS port
    FROM pg_catalog.pg_dist_schema d
    JOIN pg_catalog.pg_namespace ns ON ns.oid = d.schemaid
    LEFT JOIN LATERAL (
      SELECT n.nodename AS host, n.nodeport AS port
        FROM pg_catalog.pg_dist_partition p
        JOIN pg_catalog.pg_dist_shard s ON s.logicalrelid = p.logicalrelid
        JOIN pg_catalog.pg_dist_placement pl ON pl.shardid = s.shardid
        JOIN pg_catalog.pg_dist_node n ON n.groupid = pl.groupid AND n.noderole = 'primary'
       WHERE p.colocationid = d.colocationid
       LIMIT 1) here ON true
    LEFT JOIN workers planned ON here.host IS NULL AND planned.i = d.colocationid % planned.n`;

/** The node holding a repo's tables; undefined while it has none (Citus has not placed it yet). */
export async function repoNode(db: Queryable, schema: string): Promise<NodeAddress | undefined> {
  const res = await db.query<{ host: string; port: number }>(`SELECT host, port FROM (${REPO_NODES}) r WHERE placed AND schema = $1`, [schema]);
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
