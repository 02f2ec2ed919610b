import { test } from 'vitest';
import { startCitus } from '../bench/lib/citus.js';
import pg from 'pg';
test('citus', async () => {
const t0 = Date.now();
const c = await startCitus();
console.log('started in', Date.now() - t0, c.url());
const cl = new pg.Client({ connectionString: c.url() });
await cl.connect();
console.log((await cl.query('SELECT * FROM pg_dist_node')).rows);
await cl.query('CREATE SCHEMA "a/x"; CREATE TABLE "a/x".t (id int)');
console.log((await cl.query('SELECT * FROM pg_dist_schema')).rows);
await cl.end();
console.log(process.env.KEEP ? 'kept' : 'stopping');
if (!process.env.KEEP) await c.stop();
});
