import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';
let srv: RestServer;
beforeAll(async () => { srv = await startRest(); });
afterAll(async () => { await srv?.stop(); });
it('probe', async () => {
  const alice = await srv.user('alice'); const bob = await srv.user('bob');
  await srv.call(alice.key, 'POST', '/repos/', { name: 'secret' });
  await srv.query(alice.key, `CREATE TABLE "${alice.name}/secret"."hidden table" (id int)`);
  for (const sql of [
    `SELECT nspname FROM pg_namespace WHERE nspname LIKE '${alice.name}%'`,
    `SELECT relname FROM pg_class WHERE relname = 'hidden table'`,
    `SELECT 'x'::regclass`,
    `SELECT '"${alice.name}/secret"."hidden table"'::regclass::oid`,
    `SET statement_timeout = 0`,
    `SELECT set_config('statement_timeout', '0', false)`,
    `BEGIN`,
    `LISTEN foo`,
    `COPY (SELECT 1) TO STDOUT`,
    `COPY "${alice.name}/secret"."hidden table" FROM STDIN`,
    `SELECT 1`,
  ]) {
    const r = await srv.query(bob.key, sql);
    console.log(sql, '→', r.status, r.text);
  }
  const r = await srv.query(alice.key, `COPY "${alice.name}/secret"."hidden table" FROM STDIN`);
  console.log('alice copy from', r.status, r.text);
  const r2 = await srv.query(alice.key, `COPY "${alice.name}/secret"."hidden table" TO STDOUT`);
  console.log('alice copy to', r2.status, r2.text);
  const r3 = await srv.query(alice.key, `SELECT 1`);
  console.log('after', r3.status, r3.text);
  expect(1).toBe(1);
});
