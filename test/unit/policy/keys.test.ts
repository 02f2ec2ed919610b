// Scoped keys in the policy: what a read key and a write key of alice may run, each refusal
// naming the key, and the lend comment of a write key's DDL.
import { describe, expect, test } from 'vitest';
import { scopeRights } from '../../../src/control/key-store.js';
import type { KeyMeta } from '../../../src/control/key-scope.js';
import { LEND_COMMENT_PREFIX } from '../../../src/policy/key-scope.js';
import type { Decision, Rights, Session } from '../../../src/policy/index.js';
import { alice, inSales, policy, summary } from './fixture.js';

const base: Rights = { ...alice, publicRepos: new Set(['erin/public']) };
const meta = (access: 'read' | 'write', repos: string[] | null): KeyMeta => ({ name: 'dashboard', access, repos, expiresAt: null });
const readKey = scopeRights(base, '0123456789ab', meta('read', ['alice/sales']), true);
const writeKey = scopeRights(base, '0123456789ab', meta('write', ['alice/sales']), true);
const writeEverywhere = scopeRights(base, '0123456789ab', meta('write', null), true);
const writeNoDdl = scopeRights(base, '0123456789ab', meta('write', ['alice/sales']), false);

async function decide(sql: string, rights: Rights, session: Session = inSales): Promise<Decision> {
  return (await policy()).decide(sql, rights, session);
}

/** Allowed as it is (or rewritten for catalogs or channels, as for a full key). */
function allowed(rights: Rights, cases: string[]): void {
  for (const sql of cases) {
    test(`allows ${sql}`, async () => {
      const d = await decide(sql, rights);
      expect(['allow', 'rewrite'], summary(d)).toContain(d.kind);
      if (d.kind === 'rewrite') expect(d.sql).not.toContain(LEND_COMMENT_PREFIX);
    });
  }
}

/** Refused with 42501; `says` is in the message (the key's label, or the repo). */
function refused(rights: Rights, cases: Array<[sql: string, says: string]>): void {
  for (const [sql, says] of cases) {
    test(`refuses ${sql}`, async () => {
      const d = await decide(sql, rights);
      expect(d.kind, summary(d)).toBe('deny');
      if (d.kind !== 'deny') return;
      expect(d.error.code, d.error.message).toBe('42501');
      expect(d.error.message).toContain(says);
      expect(d.error.hint ?? '').not.toBe('');
    });
  }
}

const KEY = 'API key "dashboard" (rb_0123456789ab)';

describe('a read key of alice/sales', () => {
  allowed(readKey, [
    'SELECT * FROM t',
    'SELECT * FROM "alice/sales".t WHERE id = 1',
    'COPY t TO STDOUT',
    'COPY (SELECT * FROM t) TO STDOUT',
    'EXPLAIN SELECT * FROM t',
    'LISTEN news',
    'UNLISTEN *',
    'SHOW search_path',
    'BEGIN',
    'BEGIN READ ONLY',
    'START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY',
    'COMMIT',
    'SET default_transaction_read_only = on',
    'RESET default_transaction_read_only',
    'SET default_transaction_read_only TO DEFAULT',
    'SET statement_timeout = 1000',
    'SELECT count(*), now(), upper(\'x\') FROM t',
    'SELECT * FROM "erin/public".t',
    'LOCK t IN ACCESS SHARE MODE',
    'DECLARE c CURSOR FOR SELECT * FROM t',
    'FETCH 10 FROM c',
    'PREPARE q AS SELECT * FROM t',
    'SELECT pg_backend_pid()',
    'SELECT * FROM pg_class',
    "SELECT 'alice/sales.t'::regclass",
  ]);
  refused(readKey, [
    ['INSERT INTO t VALUES (1)', `${KEY} is read-only`],
    ['UPDATE "alice/sales".t SET v = 1', `${KEY} is read-only`],
    ['DELETE FROM t', `${KEY} is read-only`],
    ['MERGE INTO t USING t AS s ON true WHEN MATCHED THEN DELETE', `${KEY} is read-only`],
    ['TRUNCATE t', `${KEY} is read-only`],
    ['COPY t FROM STDIN', `${KEY} is read-only`],
    ['SELECT * FROM t FOR UPDATE', `${KEY} is read-only`],
    ['LOCK t', `${KEY} is read-only`],
    ['CREATE TABLE x (id int)', `${KEY} is read-only`],
    ['CREATE TEMP TABLE x (id int)', `${KEY} is read-only`],
    ['SELECT 1 INTO TEMP x', `${KEY} is read-only`],
    ['ALTER TABLE t ADD COLUMN c int', `${KEY} is read-only`],
    ['DROP TABLE t', `${KEY} is read-only`],
    ['COMMENT ON TABLE t IS \'x\'', `${KEY} is read-only`],
    ['REFRESH MATERIALIZED VIEW m', `${KEY} is read-only`],
    ['REINDEX TABLE t', `${KEY} is read-only`],
    ['EXPLAIN ANALYZE INSERT INTO t VALUES (1)', `${KEY} is read-only`],
    ['PREPARE w AS INSERT INTO t VALUES (1)', `${KEY} is read-only`],
    ["SELECT nextval('\"alice/sales\".s')", `${KEY} is read-only`],
    ['SELECT nextval($1)', `${KEY} is read-only`],
    ["SELECT setval('s', 1)", `${KEY} is read-only`],
    ['SELECT lo_create(0)', `${KEY} cannot use large objects`],
    ['SELECT lo_get(16400)', `${KEY} cannot use large objects`],
    ["SELECT pg_notify('news', 'x')", `${KEY} is read-only`],
    ["NOTIFY news, 'x'", `${KEY} is read-only`],
    ['DO $$ BEGIN PERFORM 1; END $$', `${KEY} is read-only`],
    ['CALL "alice/sales".p()', `${KEY} is read-only`],
    ['SELECT "alice/sales".f()', 'calls built-in functions only'],
    ['SELECT my_function(1)', 'calls built-in functions only'],
    ['SELECT * FROM t WHERE "alice/sales".writes(id)', 'calls built-in functions only'],
    ['SET default_transaction_read_only = off', 'stay read-only'],
    ['SET transaction_read_only TO false', 'stay read-only'],
    ['BEGIN READ WRITE', 'stay read-only'],
    ['START TRANSACTION READ WRITE', 'stay read-only'],
    ['SET TRANSACTION READ WRITE', 'stay read-only'],
    ['SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE', 'stay read-only'],
    ["SELECT set_config('default_transaction_read_only', 'off', false)", 'stay read-only'],
    ['SET ROLE bob', 'not allowed'],
    ['VACUUM t', `${KEY} is read-only`],
    ['ANALYZE t', `${KEY} is read-only`],
    ['VACUUM', 'VACUUM and ANALYZE needs a full API key'],
    ['GRANT SELECT ON t TO bob', 'GRANT is not allowed'],
    ['GRANT SELECT ON ALL TABLES IN SCHEMA "alice/sales" TO bob', `${KEY} is read-only`],
    ['CREATE SCHEMA "alice/new"', 'needs a full API key'],
    ['DROP SCHEMA "alice/sales"', 'needs a full API key'],
    ['CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$', `${KEY} is read-only`],
    ['SELECT * FROM "alice/empty".t', 'repo "alice/empty" is outside the scope of API key "dashboard"'],
    ['SELECT * FROM "carol/shared".t', 'outside the scope'],
    ['SET search_path = "alice/empty"', 'outside the scope'],
    // A repo the user cannot reach either: the same words as for the user, nothing about the key.
    ['SELECT * FROM "bob/secret".t', 'permission denied for repo "bob/secret"'],
  ]);
});

describe('a write key of alice/sales', () => {
  allowed(writeKey, [
    'INSERT INTO t VALUES (1)',
    'UPDATE t SET v = 1',
    'DELETE FROM "alice/sales".t',
    'SELECT * FROM t FOR UPDATE',
    'COPY t FROM STDIN',
    "SELECT nextval('\"alice/sales\".s')",
    "NOTIFY news, 'x'",
    'DO $$ BEGIN INSERT INTO "alice/sales".t VALUES (1); END $$',
    'SELECT * FROM "erin/public".t',
    'CREATE TEMP TABLE x (id int)',
  ]);
  refused(writeKey, [
    ['INSERT INTO "alice/empty".t VALUES (1)', 'repo "alice/empty" is outside the scope'],
    ['ALTER TABLE "alice/empty".t ADD c int', 'outside the scope'],
    ['INSERT INTO "erin/public".t VALUES (1)', 'read-only for you'],
    ['CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$', 'creating functions and procedures needs a full API key'],
    ['CREATE OR REPLACE PROCEDURE p() LANGUAGE sql AS $$ SELECT 1 $$', 'needs a full API key'],
    ['ALTER FUNCTION f() SECURITY DEFINER', 'needs a full API key'],
    ['CREATE AGGREGATE a (int) (SFUNC = int4pl, STYPE = int)', 'needs a full API key'],
    ['VACUUM t', 'needs a full API key'],
    ['CLUSTER t', 'needs a full API key'],
    ['GRANT SELECT ON t TO bob', 'GRANT is not allowed'],
    ['ALTER DEFAULT PRIVILEGES IN SCHEMA "alice/sales" GRANT SELECT ON TABLES TO bob', 'needs a full API key'],
    ['CREATE SCHEMA "alice/new"', 'needs a full API key'],
    ['DROP SCHEMA "alice/sales" CASCADE', 'needs a full API key'],
    ['COMMENT ON SCHEMA "alice/sales" IS \'x\'', 'a repo itself needs a full API key'],
    ['SELECT lo_create(0)', 'cannot use large objects'],
    ['CREATE TABLE x (v int DEFAULT "erin/public".f())', 'functions and types of its own repos only'],
    ['CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION "erin/public".f()', 'functions and types of its own repos only'],
  ]);

  test('its DDL names the objects Postgres should lend it, qualified and through the search path', async () => {
    const d = await decide('ALTER TABLE t ADD COLUMN c int; DROP INDEX "alice/sales".i', writeKey);
    expect(d.kind, summary(d)).toBe('rewrite');
    if (d.kind !== 'rewrite') return;
    expect(d.sql.startsWith(LEND_COMMENT_PREFIX)).toBe(true);
    const close = d.sql.indexOf('*/ ');
    const list = JSON.parse(Buffer.from(d.sql.slice(LEND_COMMENT_PREFIX.length, close), 'base64').toString()) as unknown;
    expect(list).toEqual([
      ['r', 'alice/sales', 't'],
      ['r', 'alice/sales', 'i'],
    ]);
    expect(d.sql.slice(close + 3)).toBe('ALTER TABLE t ADD COLUMN c int; DROP INDEX "alice/sales".i');
    // Postgres' error positions are counted in the client's text again.
    expect(d.edits.at(-1)).toEqual([[0, 0, close + 3]]);
  });

  test('statements that change no object are sent as they are', async () => {
    expect((await decide('INSERT INTO t VALUES (1)', writeKey)).kind).toBe('allow');
  });

  test('a write key for every repo lends in each of its own repos on the path, none elsewhere', async () => {
    const d = await decide('DROP TABLE t', writeEverywhere, { searchPath: ['alice/sales', 'carol/shared', 'alice/empty'] });
    expect(d.kind, summary(d)).toBe('deny'); // carol/shared is a collaborator's: no DDL there
    const ok = await decide('DROP TABLE t', writeEverywhere, { searchPath: ['alice/sales', 'alice/empty'] });
    expect(ok.kind).toBe('rewrite');
    if (ok.kind !== 'rewrite') return;
    expect(ok.sql).toContain(Buffer.from(JSON.stringify([['r', 'alice/sales', 't'], ['r', 'alice/empty', 't']])).toString('base64'));
  });

  test('without the event triggers of the service, it changes rows but no structure', async () => {
    expect((await decide('INSERT INTO t VALUES (1)', writeNoDdl)).kind).toBe('allow');
    const d = await decide('ALTER TABLE t ADD c int', writeNoDdl);
    expect(d.kind).toBe('deny');
    if (d.kind === 'deny') expect(d.error.message).toContain('does not let write keys change structure');
  });
});

describe('a full key', () => {
  test('is judged as before: no lend comment, no key in messages', async () => {
    expect((await decide('ALTER TABLE t ADD c int', base)).kind).toBe('allow');
    const d = await decide('SELECT * FROM "bob/secret".t', base);
    expect(d.kind === 'deny' && d.error.message).toBe('permission denied for repo "bob/secret"');
  });
});

describe('sharing with a write key', () => {
  test('is the control plane\'s work, which a scoped key never asks for', async () => {
    const d = await decide('GRANT SELECT ON ALL TABLES IN SCHEMA "alice/sales" TO bob', writeKey);
    expect(d.kind === 'deny' && d.error.message).toContain('GRANT and REVOKE needs a full API key');
  });
});

describe('grants to the roles of keys (in a restored pg_dump)', () => {
  test("are nothing to do for the user's own keys, whatever the privileges", async () => {
    for (const sql of [
      'GRANT SELECT ON TABLE "alice/sales".t TO "alice#0123456789ab"',
      'GRANT ALL ON TABLE "alice/sales".t TO "alice#0123456789ab"',
      'GRANT ALL ON SCHEMA "alice/sales" TO "alice#0123456789ab"',
      'ALTER DEFAULT PRIVILEGES FOR ROLE alice IN SCHEMA "alice/sales" GRANT SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER ON TABLES TO "alice#0123456789ab"',
    ]) {
      const d = await decide(sql, base);
      expect(d, sql).toMatchObject({ kind: 'handled', action: { kind: 'share', grants: [] } });
    }
  });

  test("are refused for another user's key, and for a grant to anyone else beyond sharing", async () => {
    expect((await decide('GRANT SELECT ON TABLE "alice/sales".t TO "bob#0123456789ab"', base)).kind).toBe('deny');
    expect((await decide('GRANT TRUNCATE ON TABLE "alice/sales".t TO bob', base)).kind).toBe('deny');
  });
});
