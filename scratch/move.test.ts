import { test } from 'vitest';
import pg from 'pg';
import { startCitus } from '../bench/lib/citus.js';
import { nodeName, repoNode } from '../src/upstream/citus.js';
test('move timing', async () => {
  const c = await startCitus();
  const a = new pg.Client({ connectionString: c.url() }); await a.connect();
  try {
    await a.query('CREATE SCHEMA s1; CREATE TABLE s1.t (id int primary key); INSERT INTO s1.t SELECT generate_series(1,1000)');
    for (const mode of ['force_logical', 'block_writes', 'force_logical', 'block_writes']) {
      const here = nodeName((await repoNode(a, 's1'))!);
      const to = c.workers.find((w) => nodeName(w) !== here)!;
      const t0 = Date.now();
      await a.query(`SELECT citus_schema_move('s1', $1, $2, $3::citus.shard_transfer_mode)`, [to.host, to.port, mode]);
      console.log(mode, Date.now() - t0, 'ms');
    }
  } finally { await a.end(); await c.stop(); }
});
