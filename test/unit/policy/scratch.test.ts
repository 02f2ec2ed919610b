import { test } from 'vitest';
import { createPolicy } from '../../../src/policy/index.js';
import { analyse } from '../../../src/policy/analyse.js';
test('scratch', async () => {
  const p = await createPolicy({ maxStatementBytes: 1 << 20 });
  const rights = { user: 'alice', repos: new Map([['alice/sales', 'own'], ['alice/empty', 'own'], ['carol/shared', 'write'], ['dave/readonly', 'read'], ['erin/public', 'read']] as const) };
  const session = { searchPath: ['alice/sales'] };
  for (const q of [
    'SELECT * FROM "bob/secret".t',
    'SELECT * FROM t',
    'INSERT INTO "dave/readonly".t VALUES (1)',
    'TRUNCATE "carol/shared".t',
    'CREATE TABLE x (a int REFERENCES "bob/secret".y)',
    "SELECT nextval('\"bob/x\".seq')",
    'ALTER TABLE t ALTER COLUMN c SET DATA TYPE BIGINT',
    'ALTER TABLE t ALTER c TYPE numeric(10, 2) COLLATE "C" /* x */, ALTER d TYPE int USING 0, alter e type text[];',
    'CREATE SCHEMA "alice/new"',
    'DROP SCHEMA "alice/new" CASCADE',
    'SET search_path = "dave/readonly"; INSERT INTO t VALUES (1)',
    "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN INSERT INTO \"bob/secret\".t VALUES (1); RETURN 1; END $$",
    "DO $$ DECLARE n int; BEGIN n := (SELECT count(*) FROM \"bob/secret\".t); END $$",
    'WITH t AS (SELECT 1) SELECT * FROM t',
    'SELEC 1',
  ]) {
    const d = await p.decide(q, rights, session);
    console.log(q, '→', d.kind === 'deny' ? `${d.error.code} ${d.error.message} | ${d.error.hint} | ${d.error.detail} @${d.error.position}` : JSON.stringify(d));
  }
  console.log(JSON.stringify(analyse('SELECT * FROM a JOIN "b/c".d USING (x) WHERE e IN (SELECT f FROM g)').statements[0]?.refs));
  await p.close();
});
