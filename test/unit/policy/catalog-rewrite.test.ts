// Private catalogs: reads of catalog relations are redirected to the filtered views, spliced into
// the text; what cannot be redirected safely is refused.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { JDBC_GET_TABLES } from '../../../bench/scenarios/catalog.js';
import { filteredCatalog } from '../../../src/policy/catalog-views.js';
import { pgCatalogRelations } from '../../../src/policy/catalog.js';
import { allow, rewrite, table, unsupported, denied } from './expect.js';
import { decide, summary } from './fixture.js';

const rc = 'repobase_catalog';
const ris = 'repobase_information_schema';

describe('redirected', () => {
  table([
    ['SELECT relname FROM pg_class', rewrite(`SELECT relname FROM ${rc}.pg_class`)],
    ['SELECT relname FROM pg_catalog.pg_class', rewrite(`SELECT relname FROM ${rc}.pg_class`)],
    ['SELECT relname FROM "pg_catalog"."pg_class" c', rewrite(`SELECT relname FROM ${rc}."pg_class" c`)],
    ['select pg_class.relname from PG_CATALOG.pg_class', rewrite(`select pg_class.relname from ${rc}.pg_class`)],
    ['SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class', rewrite(`SELECT ${rc}.pg_class.relname FROM ${rc}.pg_class`)],
    ['SELECT pg_catalog.pg_class.* FROM pg_catalog.pg_class', rewrite(`SELECT ${rc}.pg_class.* FROM ${rc}.pg_class`)],
    ['SELECT * FROM pg_catalog . /* x */ pg_namespace', rewrite(`SELECT * FROM ${rc} . /* x */ pg_namespace`)],
    ['SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace',
      rewrite(`SELECT n.nspname, c.relname FROM ${rc}.pg_class c JOIN ${rc}.pg_namespace n ON n.oid = c.relnamespace`)],
    ['SELECT table_name FROM information_schema.tables', rewrite(`SELECT table_name FROM ${ris}.tables`)],
    ['SELECT tables.table_name FROM information_schema.tables WHERE information_schema.tables.table_schema = \'x\'',
      rewrite(`SELECT tables.table_name FROM ${ris}.tables WHERE ${ris}.tables.table_schema = 'x'`)],
    ['SELECT 1 FROM ONLY pg_class', rewrite(`SELECT 1 FROM ONLY ${rc}.pg_class`)],
    ['SELECT (SELECT count(*) FROM pg_roles), \'é\' FROM pg_user', rewrite(`SELECT (SELECT count(*) FROM ${rc}.pg_roles), 'é' FROM ${rc}.pg_user`)],
    ['SELECT * FROM pg_stat_activity; SELECT 1', rewrite(`SELECT * FROM ${rc}.pg_stat_activity; SELECT 1`)],
    ['CREATE VIEW "alice/sales".v AS SELECT relname FROM pg_class', rewrite(`CREATE VIEW "alice/sales".v AS SELECT relname FROM ${rc}.pg_class`)],
    ['EXPLAIN SELECT * FROM pg_class', rewrite(`EXPLAIN SELECT * FROM ${rc}.pg_class`)],
    ['COPY (SELECT * FROM pg_class) TO STDOUT', rewrite(`COPY (SELECT * FROM ${rc}.pg_class) TO STDOUT`)],
    ["SELECT 'pg_class'::regclass, oid::regclass FROM pg_class WHERE oid = 'pg_catalog.pg_class'::regclass",
      rewrite(`SELECT 'pg_class'::regclass, ${rc}.visible(oid::regclass) AS "oid" FROM ${rc}.pg_class WHERE oid = 'pg_catalog.pg_class'::regclass`)],
    // With the seed rule in the same string.
    ['SELECT 1 FROM pg_class; ALTER TABLE t ALTER c TYPE int',
      rewrite(`SELECT 1 FROM ${rc}.pg_class; ALTER TABLE t ALTER c TYPE int USING "c"::int`)],
  ]);
});

describe('object-taking functions and reg* casts go through their stand-ins', () => {
  table([
    ['SELECT pg_get_viewdef(16421)', rewrite(`SELECT ${rc}.pg_get_viewdef(16421)`)],
    ["SELECT pg_catalog.pg_get_functiondef('16421')", rewrite(`SELECT ${rc}.pg_get_functiondef('16421')`)],
    ['SELECT pg_get_indexdef(o), pg_get_constraintdef(o, true) FROM generate_series(16384, 16500) o',
      rewrite(`SELECT ${rc}.pg_get_indexdef(o), ${rc}.pg_get_constraintdef(o, true) FROM generate_series(16384, 16500) o`)],
    ['SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a',
      rewrite(`SELECT ${rc}.format_type(a.atttypid, a.atttypmod) FROM ${rc}.pg_attribute a`)],
    ['SELECT pg_relation_size(c.oid), pg_stat_get_numscans(c.oid) FROM pg_class c',
      rewrite(`SELECT ${rc}.pg_relation_size(c.oid), ${rc}.pg_stat_get_numscans(c.oid) FROM ${rc}.pg_class c`)],
    ["SELECT has_table_privilege('alice', 'orders', 'SELECT')", rewrite(`SELECT ${rc}.has_table_privilege('alice', 'orders', 'SELECT')`)],
    ["SELECT to_regclass(x) FROM (VALUES ('a')) v(x)", rewrite(`SELECT ${rc}.to_regclass(x) FROM (VALUES ('a')) v(x)`)],
    ['SELECT pg_filenode_relation(0, 16384)', rewrite(`SELECT ${rc}.pg_filenode_relation(0, 16384)`)],
    // Casts: the value, its parentheses and the whole type name are wrapped.
    // An output column keeps the name Postgres gave it before the wrap.
    ['SELECT o::regclass FROM generate_series(1, 3) o', rewrite(`SELECT ${rc}.visible(o::regclass) AS "o" FROM generate_series(1, 3) o`)],
    ['SELECT tableoid::regclass::text, CAST(o AS regclass), 1::regtype AS t, (o+1)::regclass FROM x',
      rewrite(`SELECT ${rc}.visible(tableoid::regclass)::text AS "tableoid", ${rc}.visible(CAST(o AS regclass)) AS "o", ${rc}.visible(1::regtype) AS t, ${rc}.visible((o+1)::regclass) AS "regclass" FROM x`)],
    ['UPDATE "alice/sales".t SET a = b::regclass RETURNING c::regclass',
      rewrite(`UPDATE "alice/sales".t SET a = ${rc}.visible(b::regclass) RETURNING ${rc}.visible(c::regclass) AS "c"`)],
    ['SELECT (o + 1)::pg_catalog.regclass, ((o))::regtype[] FROM generate_series(1, 3) o',
      rewrite(`SELECT ${rc}.visible((o + 1)::pg_catalog.regclass) AS "regclass", ${rc}.visible(((o))::regtype[]) AS "o" FROM generate_series(1, 3) o`)],
    ['SELECT CAST(16421 AS regprocedure), 16421::oid::regrole', rewrite(`SELECT ${rc}.visible(CAST(16421 AS regprocedure)) AS "regprocedure", ${rc}.visible(16421::oid::regrole) AS "regrole"`)],
    ["SELECT regclass '16421', f(x)::regclass FROM t", rewrite(`SELECT ${rc}.visible(regclass '16421') AS "regclass", ${rc}.visible(f(x)::regclass) AS "f" FROM t`)],
    ["SELECT regclass(x) FROM (VALUES ('a')) v(x)", rewrite(`SELECT ${rc}.regclass(x) FROM (VALUES ('a')) v(x)`)],
    ['SELECT c.oid::pg_catalog.regclass FROM pg_catalog.pg_class c WHERE c.oid = 1259::regclass',
      rewrite(`SELECT ${rc}.visible(c.oid::pg_catalog.regclass) AS "oid" FROM ${rc}.pg_class c WHERE c.oid = ${rc}.visible(1259::regclass)`)],
    ["SELECT 'alice'::regrole", rewrite(`SELECT ${rc}.visible('alice'::regrole) AS "regrole"`)],
    ["SELECT '{1,2}'::regclass[]", rewrite(`SELECT ${rc}.visible('{1,2}'::regclass[]) AS "regclass"`)],
    // A BEGIN ATOMIC body is part of the statement: its calls are redirected when it is created.
    ['CREATE FUNCTION "alice/sales".f(o oid) RETURNS text LANGUAGE sql BEGIN ATOMIC SELECT o::regclass::text; END',
      rewrite(`CREATE FUNCTION "alice/sales".f(o oid) RETURNS text LANGUAGE sql BEGIN ATOMIC SELECT ${rc}.visible(o::regclass)::text AS "o"; END`)],
  ]);
});

describe('object-taking functions with constant names are checked in place', () => {
  table([
    ["SELECT to_tsvector('english', body) FROM \"alice/sales\".docs", allow],
    ["SELECT pg_get_viewdef('\"alice/sales\".v')", allow],
    ["SELECT pg_get_viewdef('\"bob/secret\".v')", denied('bob/secret')],
    ["SELECT pg_relation_size('orders'), nextval('s')", allow],
    ["SELECT 'orders'::regclass, 'int4'::regtype, 'english'::regconfig", allow],
  ]);
});

describe('refused functions', () => {
  table([
    ["SELECT regclassout(1259)", denied()],
    ["SELECT int4in('1')", denied()],
    ['SELECT * FROM pg_stat_get_activity(NULL)', denied()],
    ['SELECT pg_stat_get_backend_activity(1)', denied()],
    ['SELECT plpgsql_validator(16421)', denied()],
    ["SELECT pg_get_object_address('table', '{x}', '{}')", denied()],
    ['SELECT pg_catalog.no_such_function_anywhere()', denied()],
    ['SELECT no_such_function_anywhere()', allow],
  ]);
});

describe('relations naming backends by process id show the client its own as pg_backend_pid() does', () => {
  table([
    ['SELECT * FROM pg_locks WHERE pid = pg_backend_pid()', rewrite('SELECT * FROM repobase_catalog.pg_locks WHERE pid = repobase_catalog.pg_backend_pid()')],
    ['SELECT ssl FROM pg_catalog.pg_stat_ssl', rewrite('SELECT ssl FROM repobase_catalog.pg_stat_ssl')],
    ['SELECT 1 FROM pg_stat_gssapi', rewrite('SELECT 1 FROM repobase_catalog.pg_stat_gssapi')],
  ]);
});

describe('left alone', () => {
  table([
    ['SELECT * FROM orders', allow],
    ['SELECT * FROM pg_catalog.pg_am', allow],
    ['SELECT * FROM pg_settings', allow],
    // The session's own statements: a pooled client's, not its backend's (session-stand-ins.ts).
    ['SELECT * FROM pg_prepared_statements', rewrite('SELECT * FROM repobase_catalog.pg_prepared_statements')],
    ["SELECT 'pg_class'::regclass", allow],
    ['WITH pg_class AS (SELECT 1 AS relname) SELECT relname FROM pg_class', allow],
    ['SELECT pg_class.relname FROM orders AS pg_class', allow],
    ['SELECT * FROM information_schema.sql_features', rewrite(`SELECT * FROM ${ris}.sql_features`)],
    ['LOCK TABLE pg_class IN ACCESS SHARE MODE', allow],
  ]);
});

describe('refused', () => {
  table([
    ['COPY pg_class TO STDOUT', unsupported],
    ['SELECT * FROM postgres.pg_catalog.pg_class', unsupported],
    ['SELECT postgres.pg_catalog.pg_class.relname FROM pg_class', unsupported],
    ['CREATE FUNCTION "alice/sales".f() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM pg_class $$', unsupported],
    ['DO $$ BEGIN PERFORM 1 FROM pg_namespace; END $$', unsupported],
    ['CREATE FUNCTION "alice/sales".f(o oid) RETURNS text LANGUAGE sql AS $$ SELECT pg_get_viewdef(o) $$', unsupported],
    ['DO $$ BEGIN RAISE NOTICE \'%\', pg_get_functiondef(16421); END $$', unsupported],
    ['DO $$ DECLARE r regclass; BEGIN r := 16421; RAISE NOTICE \'%\', r::regclass; END $$', unsupported],
    ['CREATE FUNCTION "alice/sales".f() RETURNS bigint LANGUAGE sql AS $$ SELECT nextval(\'"alice/sales".s\') $$', allow],
    ['SELECT * FROM repobase_catalog.pg_class', denied('repobase_catalog')],
    ['INSERT INTO pg_class DEFAULT VALUES', denied('pg_catalog')],
  ]);
  table([['SELECT * FROM pg_class', unsupported, { searchPath: ['alice/sales', 'pg_catalog'] }]]);
  table([['SELECT * FROM tables', unsupported, { searchPath: ['alice/sales', 'information_schema'] }]]);
  table([["SELECT pg_notify('x', 'y')", unsupported, { searchPath: ['alice/sales', 'pg_catalog'] }]]);
  table([['SELECT format_type(1, 2)', unsupported, { searchPath: ['alice/sales', 'pg_catalog'] }]]);
  table([['SELECT * FROM pg_class', rewrite(`SELECT * FROM ${rc}.pg_class`), { searchPath: ['pg_catalog', 'alice/sales'] }]]);
});

test('pgjdbc getTables is redirected', async () => {
  const d = await decide(JDBC_GET_TABLES);
  expect(d.kind === 'rewrite' && d.sql).toContain('FROM repobase_catalog.pg_namespace n, repobase_catalog.pg_class c  LEFT JOIN repobase_catalog.pg_description d');
});

test('every filtered relation is a pg_catalog relation', () => {
  for (const name of filteredCatalog.keys()) expect(pgCatalogRelations.has(name), name).toBe(true);
});

test('a rewrite is cached and served to every user alike', async () => {
  const sql = 'SELECT nspname FROM pg_namespace WHERE nspname = $1';
  const a = await decide(sql);
  const b = await decide(sql, { searchPath: ['bob/x'] }, { user: 'bob', repos: new Map([['bob/x', 'own']]) });
  expect(summary(a)).toBe(summary(b));
  expect(a.kind).toBe('rewrite');
});

test('the client corpus is redirected, never refused', async () => {
  const corpus = JSON.parse(readFileSync(new URL('../../fixtures/policy/client-queries.json', import.meta.url), 'utf8')) as { captures: Array<{ statements: string[] }> };
  let redirected = 0;
  for (const sql of corpus.captures.flatMap((c) => c.statements)) {
    const d = await decide(sql, { searchPath: ['alice/sales'] });
    expect(['allow', 'rewrite'], `${sql}\n${summary(d)}`).toContain(d.kind);
    if (d.kind === 'rewrite') {
      redirected++;
      expect(d.sql).not.toMatch(/\bpg_catalog\.pg_(class|namespace|attribute|proc|type)\b/);
    }
  }
  expect(redirected).toBeGreaterThan(50);
});
