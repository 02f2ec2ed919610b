// How names are spelled and where unqualified ones land: quoting, case folding, search_path,
// CTE shadowing, statement splitting around comments and dollar quotes, parameters.
import { describe } from 'vitest';
import type { Session } from '../../../src/policy/index.js';
import { allow, deny, denied, rewrite, table, unsupported } from './expect.js';

const path = (...searchPath: string[]): Session => ({ searchPath });
const postgresDefault = path('$user', 'public');

describe('quoting and case folding', () => {
  table([
    ['SELECT * FROM "alice/sales"."my table"', allow],
    ['SELECT * FROM "alice/sales"."Orders 2024" o WHERE o."Customer Name" = \'x\'', allow],
    ['SELECT * FROM "bob/secret"."my ""quoted"" table"', denied('bob/secret')],
    ['SELECT * FROM "bob/sec""ret".t', denied('bob/sec"ret')],
    ['SELECT * FROM U&"bob\\002fsecret".t', denied('bob/secret')],
    ['SELECT * FROM U&"alice\\002fsales".t', allow],
    ["SELECT * FROM U&\"!0062ob/secret\" UESCAPE '!'.t", denied('bob/secret')],
    ['SELECT * FROM "Alice/sales".t', denied('Alice/sales')],
    ['SELECT * FROM "ALICE/SALES".t', denied('ALICE/SALES')],
    ['SELECT * FROM "alice/Sales".t', deny('3F000', 'alice/Sales')],
    ['SELECT * FROM "alice/nope".t', deny('3F000', 'alice/nope')],
    ['SELECT * FROM "alice/sales".T', allow],
    ['SELECT * FROM "dave/readonly"."Orders 2024"', allow],
    ['SELECT * FROM repobase."bob/secret".t', denied('bob/secret')],
    ['SELECT * FROM "bob/secret" . t', denied('bob/secret')],
    ['SELECT * FROM"bob/secret".t', denied('bob/secret')],
    ['SELECT "bob/secret".t.a FROM "alice/sales".t', allow],
  ]);
});

describe('unqualified names through search_path', () => {
  table([
    ['SELECT * FROM t', allow],
    ['INSERT INTO t VALUES (1)', allow],
    ['CREATE TABLE t (a int)', allow],
    ['DROP TABLE t', allow],
    ['SELECT * FROM t', allow, path('dave/readonly')],
    ['INSERT INTO t VALUES (1)', denied('dave/readonly'), path('dave/readonly')],
    ['CREATE TABLE t (a int)', denied('dave/readonly'), path('dave/readonly')],
    ['INSERT INTO t VALUES (1)', allow, path('carol/shared')],
    ['CREATE TABLE t (a int)', denied('carol/shared'), path('carol/shared')],
    ['TRUNCATE t', denied('carol/shared'), path('carol/shared')],
    ['SELECT * FROM t', allow, path('alice/sales', 'dave/readonly')],
    ['INSERT INTO t VALUES (1)', denied('dave/readonly'), path('alice/sales', 'dave/readonly')],
    ['SELECT * FROM t', denied('bob/secret'), path('alice/sales', 'bob/secret')],
    // public holds nothing: Postgres finds the name earlier on the path, or says 42P01.
    ['SELECT * FROM t', allow, postgresDefault],
    ['SELECT * FROM t', allow, path('alice/sales', 'public')],
    ['SELECT * FROM t', denied('bob/secret'), path('public', 'bob/secret')],
    ['CREATE TABLE t (a int)', denied('public'), postgresDefault],
    ['CREATE TABLE t (a int)', allow, path('alice/sales', 'public')],
    ['CREATE TEMP TABLE t (a int)', allow, postgresDefault],
    ['SELECT * FROM pg_class', rewrite('SELECT * FROM repobase_catalog.pg_class'), postgresDefault],
    ['SELECT * FROM pg_tables WHERE schemaname = \'alice/sales\'', rewrite('SELECT * FROM repobase_catalog.pg_tables WHERE schemaname = \'alice/sales\''), postgresDefault],
    ['SELECT * FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid', rewrite('SELECT * FROM repobase_catalog.pg_namespace n JOIN repobase_catalog.pg_class c ON c.relnamespace = n.oid')],
    ['INSERT INTO pg_class VALUES (1)', denied('pg_catalog'), postgresDefault],
    ['SELECT * FROM information_schema.tables', rewrite('SELECT * FROM repobase_information_schema.tables'), postgresDefault],
    ['SELECT * FROM tables', allow, postgresDefault],
    // Unqualified information_schema names are not redirected: refused rather than shown unfiltered.
    ['SELECT * FROM tables', unsupported, path('alice/sales', 'information_schema')],
    ['SELECT * FROM columns', unsupported, path('information_schema')],
    ['UPDATE columns SET x = 1', denied('information_schema'), path('information_schema')],
    ['CREATE TABLE t (a int)', denied('pg_catalog'), path('pg_catalog', 'alice/sales')],
    ['CREATE TABLE t (a int)', allow, path()],
    ['SELECT * FROM t', allow, path()],
    ['CREATE TABLE t (a int)', allow, path('pg_temp', 'public')],
    ['SELECT * FROM t', allow, path('$user')],
    ['SELECT * FROM t', allow, path('$user', 'alice/sales')],
    ['CREATE FUNCTION f() RETURNS int LANGUAGE sql AS \'SELECT 1\'', denied('dave/readonly'), path('dave/readonly')],
    ['DROP FUNCTION f()', denied('carol/shared'), path('carol/shared')],
    ['SELECT f()', allow, path('dave/readonly')],
    ['SELECT 1::mytype', allow, postgresDefault],
    ['SELECT * FROM pg_temp.t', allow],
    ['INSERT INTO pg_temp_3.t VALUES (1)', allow],
    ['SELECT * FROM pg_catalog.pg_class', rewrite('SELECT * FROM repobase_catalog.pg_class')],
    ['DELETE FROM pg_catalog.pg_class', denied('pg_catalog')],
    ['UPDATE information_schema.tables SET x = 1', denied('information_schema')],
    ['SELECT * FROM public.t', denied('public')],
    ['SELECT * FROM foo.t', denied('foo')],
    ['SELECT * FROM pg_toast.pg_toast_1234', denied('pg_toast')],
  ]);
});

describe('CTE names shadow unqualified names in their scope only', () => {
  table([
    ['WITH t AS (SELECT 1) SELECT * FROM t', allow, postgresDefault],
    ['WITH t AS (SELECT 1) SELECT * FROM "bob/secret".t', denied('bob/secret'), postgresDefault],
    ['WITH t AS (SELECT 1) SELECT * FROM (SELECT * FROM t) s', allow, postgresDefault],
    ['WITH t AS (SELECT 1) SELECT * FROM t WHERE EXISTS (SELECT 1 FROM t)', allow, postgresDefault],
    ['SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t) s, t', denied('bob/secret'), path('bob/secret')],
    ['WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a', denied('bob/secret'), path('bob/secret')],
    ['WITH b AS (SELECT 1), a AS (SELECT * FROM b) SELECT * FROM a', allow, postgresDefault],
    ['WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a', allow, postgresDefault],
    ['WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r', allow, postgresDefault],
    ['WITH t AS (SELECT 1) INSERT INTO t VALUES (1)', denied('bob/secret'), path('bob/secret')],
    ['WITH t AS (SELECT 1) UPDATE t SET a = 1', denied('dave/readonly'), path('dave/readonly')],
    ['WITH t AS (SELECT 1) DELETE FROM "alice/sales".x WHERE a IN (SELECT * FROM t)', allow, postgresDefault],
    ['WITH x AS (SELECT 1) SELECT * FROM x UNION SELECT * FROM y', denied('bob/secret'), path('bob/secret')],
    ['(WITH x AS (SELECT 1) SELECT * FROM x) UNION SELECT 1', allow, postgresDefault],
    ['SELECT 1 UNION (WITH x AS (SELECT 1) SELECT * FROM x)', allow, postgresDefault],
    ['WITH x AS (SELECT 1) SELECT * FROM (SELECT 1) s UNION (WITH y AS (SELECT 2) SELECT * FROM x, y)', allow, postgresDefault],
    ['WITH "Orders 2024" AS (SELECT 1) SELECT * FROM "Orders 2024"', allow, postgresDefault],
    ['WITH t AS (SELECT * FROM "bob/secret".t) SELECT * FROM t', denied('bob/secret'), postgresDefault],
    ['WITH t AS MATERIALIZED (SELECT 1) SELECT * FROM t', allow, postgresDefault],
    ['INSERT INTO "alice/sales".t WITH s AS (SELECT 1) SELECT * FROM s', allow, postgresDefault],
  ]);
});

describe('statement splitting: comments, strings and dollar quotes hide semicolons', () => {
  table([
    ['SELECT 1; -- ; DROP TABLE x\n', allow],
    ["SELECT '; DELETE FROM \"bob/secret\".t'", allow],
    ['SELECT $$; DELETE FROM "bob/secret".t;$$', allow],
    ['SELECT $tag$ $$ ; $tag$; SELECT * FROM "bob/secret".t', denied('bob/secret')],
    ['/* ; */ SELECT 1 /* nested /* ; */ still comment */', allow],
    ['SELECT 1 -- ; SELECT * FROM "bob/secret".t', allow],
    ['SELECT 1; SELECT * FROM "bob/secret".t', denied('bob/secret')],
    ['SELECT * FROM "bob/secret".t; SELECT 1', denied('bob/secret')],
    ["SELECT E'\\'; SELECT * FROM \"bob/secret\".t; --'", allow],
    ["SELECT 'it''s'; SELECT * FROM \"bob/secret\".t", denied('bob/secret')],
    ['SELECT "a;b" FROM "alice/sales".t', allow],
    ['SELECT 1;;;SELECT 2;', allow],
    ['SELECT 1 /* ; SELECT * FROM "bob/secret".t */ ; SELECT 2', allow],
  ]);
});

describe('parameters', () => {
  table([
    ['SELECT * FROM "alice/sales".t WHERE id = $1', allow],
    ['INSERT INTO "dave/readonly".t VALUES ($1, $2)', denied('dave/readonly')],
    ['SELECT $1::int, $2::text', allow],
    ['UPDATE "carol/shared".t SET a = $1 WHERE id = $2 RETURNING *', allow],
    // A non-constant relation name cannot be checked here; Postgres' role wall checks the sequence.
    ['SELECT nextval($1)', rewrite('SELECT repobase_catalog.nextval($1)')],
    ['SELECT set_config($1, $2, false)', rewrite('SELECT repobase_catalog.set_config($1, $2, false)')],
    ['SELECT * FROM "bob/secret".t WHERE id = $1', denied('bob/secret')],
  ]);
});
