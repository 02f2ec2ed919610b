import { test, expect } from 'vitest';
import pg from 'pg';
import { startCitus } from '../bench/lib/citus.js';
import { nodeName, repoNode } from '../src/upstream/citus.js';
test('move loss', async () => {
  const c = await startCitus();
  const a = new pg.Client({ connectionString: c.url() }); await a.connect();
  try {
    await a.query('CREATE SCHEMA s1; CREATE TABLE s1.log (n int primary key)');
    await a.query('ALTER DATABASE repobase SET citus.enable_non_colocated_router_query_pushdown TO on');
    for (const mode of ['force_logical', 'force_logical', 'force_logical']) {
      await a.query('TRUNCATE s1.log');
      const w = new pg.Client({ connectionString: c.url() }); await w.connect();
      let n = 0, stop = false; const errors: string[] = [];
      const writing = (async () => { while (!stop) { try { await w.query('INSERT INTO s1.log VALUES ($1)', [n + 1]); n++; } catch (e) { errors.push((e as Error).message); if (errors.length > 5) return; } } })();
      await new Promise((r) => setTimeout(r, 500));
      const here = nodeName((await repoNode(a, 's1'))!);
      const to = c.workers.find((x) => nodeName(x) !== here)!;
      await a.query(`SELECT citus_schema_move('s1', $1, $2, $3::citus.shard_transfer_mode)`, [to.host, to.port, mode]);
      await new Promise((r) => setTimeout(r, 500));
      stop = true; await writing; await w.end();
      const r = await a.query('SELECT count(*)::int AS c, max(n) AS m FROM s1.log');
      console.log(mode, 'acked', n, 'count', r.rows[0], 'errors', errors);
    }
  } finally { await a.end(); await c.stop(); }
});
