// Citus' settings, administrative functions and metadata are the operator's. A user who turns off
// citus.enable_ddl_propagation corrupts the cluster's metadata; citus_schema_move,
// run_command_on_workers or create_distributed_table act on the whole cluster, whatever the
// role wall lets them touch; and Citus' metadata relations (pg_dist_*, citus_tables,
// citus_shards…, readable by every role) list every tenant's repos and tables and the nodes'
// addresses. Harmless everywhere else: no plain Postgres has these names.
import type { Refusal } from './facts.js';
import { refusals } from './refusals.js';

/** Prefixes and names of Citus' functions (in pg_catalog) that change the cluster or run SQL on its nodes. */
const ADMIN_PREFIXES = [
  'citus_', 'master_', 'worker_', 'run_command_on_', 'create_distributed_', 'create_reference_table', 'create_time_partitions',
  'drop_old_time_partitions', 'undistribute_table', 'alter_distributed_table', 'alter_table_set_access_method',
  'alter_old_partitions_set_access_method', 'rebalance_table_shards', 'get_rebalance_', 'isolate_tenant_to_new_shard',
  'replicate_reference_tables', 'replicate_table_shards', 'mark_tables_colocated', 'update_distributed_table_colocation',
  'start_metadata_sync_to_node', 'stop_metadata_sync_to_node', 'truncate_local_data_after_distributing_table',
  'remove_local_tables_from_metadata', 'recover_prepared_transactions', 'lock_shard_', 'fix_partition_shard_index_names',
  'fix_all_partition_shard_index_names', 'get_shard_id_for_distribution_column', 'shard_name',
];

/** What clients may read of Citus. */
const READABLE = new Set(['citus_version']);

export function citusFunctionRefusal(name: string): Refusal | undefined {
  if (READABLE.has(name) || !ADMIN_PREFIXES.some((p) => name.startsWith(p))) return undefined;
  return refusals.citusFunction(name);
}

/** Setting a `citus.*` parameter (resetting one is fine: it returns to the operator's value). */
export function citusSettingRefusal(name: string): Refusal | undefined {
  return name.toLowerCase().startsWith('citus.') ? refusals.citusSetting(name.toLowerCase()) : undefined;
}

/**
 * A read of Citus' metadata: a `pg_dist_*` or `citus_*` relation named in pg_catalog, or
 * unqualified (Postgres finds it in pg_catalog before any repo). A user's own table of such a
 * name is reached by qualifying it with its repo.
 */
export function citusRelationRefusal(schema: string | null, name: string): Refusal | undefined {
  if (schema !== null && schema !== 'pg_catalog') return undefined;
  if (!name.startsWith('pg_dist_') && !name.startsWith('citus_')) return undefined;
  return refusals.citusMetadata(name);
}
