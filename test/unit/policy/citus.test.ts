// Citus' settings and administrative functions are the operator's (see src/policy/citus.ts).
import { describe } from 'vitest';
import { allow, denied, rewrite, table } from './expect.js';

describe('citus.* settings', () => {
  table([
    ['SET citus.enable_ddl_propagation TO off', denied()],
    ['SET LOCAL citus.enable_repartition_joins = on', denied()],
    ['SET "citus.max_adaptive_executor_pool_size" = 1', denied()],
    ["SELECT set_config('citus.enable_ddl_propagation', 'off', false)", denied()],
    ["SELECT pg_catalog.set_config('Citus.Log_Remote_Commands', 'on', true)", denied()],
    ['CREATE FUNCTION "alice/sales".f() RETURNS int LANGUAGE sql SET citus.enable_ddl_propagation = off AS $$ SELECT 1 $$', denied()],
    ['RESET citus.enable_ddl_propagation', allow],
    ['SET citus.enable_ddl_propagation TO DEFAULT', allow],
    ['SHOW citus.shard_count', allow],
    // Read through the stand-in that answers for custom settings (session-stand-ins.ts).
    ["SELECT current_setting('citus.shard_count')", rewrite("SELECT repobase_catalog.current_setting('citus.shard_count')")],
  ]);
});

describe("Citus' functions", () => {
  table([
    ["SELECT citus_schema_move('\"alice/sales\"'::regnamespace, 'w1', 5432)", denied()],
    ["SELECT pg_catalog.citus_move_shard_placement(1, 'a', 1, 'b', 2)", denied()],
    ["SELECT run_command_on_workers('DROP TABLE x')", denied()],
    ["SELECT create_distributed_table('\"alice/sales\".orders', 'id')", denied()],
    ["SELECT undistribute_table('\"alice/sales\".orders')", denied()],
    ['SELECT rebalance_table_shards()', denied()],
    ['SELECT master_get_active_worker_nodes()', denied()],
    ['SELECT citus_version()', allow],
    // A user's own function may share the name: only built-ins are judged.
    ['SELECT "alice/sales".citus_schema_move()', allow],
  ]);
});

describe("Citus' metadata", () => {
  table([
    ['SELECT * FROM pg_dist_node', denied()],
    ['SELECT * FROM pg_catalog.pg_dist_partition', denied()],
    ['SELECT * FROM citus_tables', denied()],
    ['SELECT * FROM pg_catalog.citus_shards JOIN pg_class ON true', denied()],
    ['SELECT * FROM citus_schemas', denied()],
    // A table of one's own with such a name, through its repo.
    ['SELECT * FROM "alice/sales".citus_tables', allow],
    ['CREATE TABLE "alice/sales".pg_dist_notes (id int)', allow],
  ]);
});
