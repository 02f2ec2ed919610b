import { test } from 'vitest';
import pg from 'pg';
import { startCitus } from '../bench/lib/citus.js';
import { startServiceOn } from '../test/helpers/faults.js';
test('explore', async () => {
  const c = await startCitus();
  const svc = await startServiceOn(c.url());
  const admin = new pg.Client({ connectionString: c.url() }); await admin.connect();
  const rest = async (key: string, sql: string) => { const r = await fetch(`${svc.httpUrl}/api/v1beta/query/`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ query_string: sql }) }); return [r.status, JSON.stringify(await r.json()).slice(0, 300)]; };
  try {
    const u = await svc.user('ann');
    await svc.control.createRepo({ owner: u.name, repo: 'a' });
    await svc.control.createRepo({ owner: u.name, repo: 'b' });
    console.log('dist schemas', (await admin.query("SELECT schemaid::regnamespace, colocationid FROM pg_dist_schema")).rows);
    console.log(await rest(u.key, `CREATE TABLE "${u.name}/a".t (id int primary key, v text)`));
    console.log(await rest(u.key, `CREATE TABLE "${u.name}/b".s (id int primary key, w text)`));
    console.log(await rest(u.key, `INSERT INTO "${u.name}/a".t VALUES (1,'12')`));
    console.log(await rest(u.key, `INSERT INTO "${u.name}/b".s VALUES (1,'x')`));
    console.log('placements', (await admin.query("SELECT * FROM citus_schemas")).rows);
    console.log('shards', (await admin.query("SELECT table_name, nodename, nodeport FROM citus_shards")).rows);
    console.log('join', await rest(u.key, `SELECT * FROM "${u.name}/a".t JOIN "${u.name}/b".s USING (id)`));
    console.log('type', await rest(u.key, `ALTER TABLE "${u.name}/a".t ALTER COLUMN v TYPE bigint`));
    const w = new pg.Client(svc.pgOptions(u.name, u.key)); await w.connect();
    await w.query(`CREATE SCHEMA "${u.name}/c"`);
    console.log('wire create', (await admin.query("SELECT schemaid::regnamespace FROM pg_dist_schema")).rows);
    await w.query(`CREATE TABLE "${u.name}/c".x (id int)`);
    console.log('shards2', (await admin.query("SELECT table_name, nodename, nodeport FROM citus_shards")).rows);
    try { await w.query('SET citus.enable_ddl_propagation TO off'); console.log('set citus allowed'); } catch (e) { console.log('set citus', (e as Error).message); }
    try { console.log(await w.query(`SELECT * FROM "${u.name}/a".t JOIN "${u.name}/b".s USING (id)`).then(r=>r.rows)); } catch (e) { console.log('wire join', (e as any).code, (e as Error).message); }
    try { await w.query('SELECT pg_sleep(0.1)'); } catch (e) { console.log(e); }
    await w.end();
  } finally { await admin.end(); await svc.stop(); await c.stop(); }
});
