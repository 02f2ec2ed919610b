// Service rules, repo creation in SQL, and session changes.
import { describe, expect, test } from 'vitest';
import type { HandledAction, Session } from '../../../src/policy/index.js';
import { allow, changes, deny, denied, rewrite, table, unsupported, type Expected } from './expect.js';
import { decide } from './fixture.js';

const handled = (action: HandledAction): Expected => ({ kind: 'handled', action });
const create = (repo: string, ifNotExists = false): Expected => handled({ kind: 'create_repo', owner: 'alice', repo, ifNotExists });
const drop = (repo: string, ifExists = false, cascade = false): Expected => handled({ kind: 'drop_repo', owner: 'alice', repo, ifExists, cascade });

describe('roles and privileges', () => {
  table([
    ['CREATE ROLE x', denied()],
    ['CREATE USER x PASSWORD \'p\'', denied()],
    ['CREATE GROUP g', denied()],
    ["ALTER ROLE alice PASSWORD 'x'", denied()],
    ['ALTER USER alice SET search_path = x', denied()],
    ['ALTER ROLE alice RENAME TO bob', denied()],
    ['DROP ROLE bob', denied()],
    ['DROP USER IF EXISTS bob', denied()],
    ['DROP GROUP g', denied()],
    ['SET ROLE bob', denied()],
    ['SET ROLE "bob"', denied()],
    ['SET LOCAL ROLE bob', denied()],
    ['SET "ROLE" TO bob', denied()],
    ['SET SESSION AUTHORIZATION bob', denied()],
    ['SET SESSION AUTHORIZATION DEFAULT', allow],
    ['RESET SESSION AUTHORIZATION', allow],
    ['RESET ROLE', allow],
    ['SET ROLE NONE', allow],
    ["SELECT set_config('role', 'bob', false)", denied()],
    ["SELECT set_config('ROLE', 'bob', false)", denied()],
    ["SELECT pg_catalog.set_config('session_authorization', 'bob', true)", denied()],
    ['GRANT bob TO alice', denied()],
    ['REVOKE bob FROM alice', denied()],
    ['REASSIGN OWNED BY alice TO bob', denied()],
    ['DROP OWNED BY alice', denied()],
    ['GRANT ALL ON ALL TABLES IN SCHEMA "alice/sales" TO PUBLIC', denied()],
    ['REVOKE ALL ON SCHEMA "alice/sales" FROM PUBLIC', denied()],
    ['REVOKE SELECT ON "alice/sales".t FROM bob', denied()],
    ['GRANT SELECT ON t TO bob', denied()],
    ['GRANT SELECT ON "bob/secret".t TO carol', denied('bob/secret')],
    ['GRANT USAGE ON SCHEMA "carol/shared" TO dave', denied('carol/shared')],
    ['GRANT TRUNCATE ON "alice/sales".t TO bob', denied()],
    ['GRANT SELECT (a) ON "alice/sales".t TO bob', denied()],
    ['GRANT SELECT ON "alice/sales".t TO bob WITH GRANT OPTION', denied()],
    ['GRANT CREATE ON SCHEMA "alice/sales" TO bob', denied()],
    ['GRANT EXECUTE ON FUNCTION "alice/sales".f() TO bob', denied()],
    ['GRANT INSERT ON "alice/sales".t TO PUBLIC', denied()],
    ['ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO bob', denied()],
    ['ALTER DEFAULT PRIVILEGES FOR ROLE bob IN SCHEMA "alice/sales" GRANT SELECT ON TABLES TO carol', denied()],
    ['GRANT USAGE ON SCHEMA "alice/sales" TO bob; SELECT 1', unsupported],
    // GRANTs the collaborator model expresses are sharing, done by the control plane (a restored pg_dump).
    ['GRANT SELECT ON "alice/sales".t TO bob', handled({ kind: 'share', owner: 'alice', grants: [{ repo: 'sales', grantee: 'bob', level: 'read' }] })],
    ['GRANT USAGE ON SCHEMA "alice/sales" TO bob, PUBLIC', handled({ kind: 'share', owner: 'alice', grants: [{ repo: 'sales', grantee: 'bob', level: 'read' }, { repo: 'sales', grantee: null, level: 'read' }] })],
    ['GRANT SELECT,INSERT,UPDATE,DELETE ON TABLE "alice/sales".t TO bob;\nGRANT SELECT,USAGE ON SEQUENCE "alice/sales".s TO carol;',
      handled({ kind: 'share', owner: 'alice', grants: [{ repo: 'sales', grantee: 'bob', level: 'write' }, { repo: 'sales', grantee: 'carol', level: 'write' }] })],
    ['ALTER DEFAULT PRIVILEGES FOR ROLE alice IN SCHEMA "alice/sales" GRANT SELECT ON TABLES TO bob',
      handled({ kind: 'share', owner: 'alice', grants: [{ repo: 'sales', grantee: 'bob', level: 'read' }] })],
    ['GRANT ALL ON SCHEMA "alice/sales" TO alice', denied()],
    ['GRANT USAGE ON SCHEMA "alice/sales" TO alice', handled({ kind: 'share', owner: 'alice', grants: [] })],
    ['ALTER TABLE "alice/sales".t OWNER TO bob', denied()],
    ['ALTER FUNCTION "alice/sales".f() OWNER TO bob', denied()],
    ['ALTER SCHEMA "alice/sales" OWNER TO bob', denied()],
    ['ALTER TABLE "bob/secret".t OWNER TO alice', denied('bob/secret')],
    ['ALTER TYPE "alice/sales".mood OWNER TO PUBLIC', denied()],
    // The owner already: a no-op, as a restored pg_dump script carries it.
    ['ALTER TYPE "alice/sales".mood OWNER TO CURRENT_USER', allow],
    ['ALTER SCHEMA "alice/sales" OWNER TO alice', allow],
    ['ALTER TABLE "alice/sales".t OWNER TO alice', allow],
    ['ALTER FUNCTION "alice/sales".f(int) OWNER TO "alice"', allow],
  ]);

  test('GRANT beyond the collaborator model is refused with a pointer to the sharing API', async () => {
    const d = await decide('GRANT TRUNCATE ON "alice/sales".t TO bob');
    expect(d.kind === 'deny' && d.error.hint).toContain('PUT /api/v1beta/repos/<user>/<repo>/collaborators/<name>');
  });
});

describe('server administration, extensions, foreign data', () => {
  table([
    ['CREATE DATABASE x', denied()],
    ['DROP DATABASE repobase', denied()],
    ['ALTER DATABASE repobase SET search_path = x', denied()],
    ['ALTER DATABASE repobase RENAME TO x', denied()],
    ['COMMENT ON DATABASE repobase IS \'x\'', denied()],
    ["ALTER SYSTEM SET work_mem = '1GB'", denied()],
    ['ALTER SYSTEM RESET ALL', denied()],
    ["LOAD 'auto_explain'", denied()],
    ['CHECKPOINT', denied()],
    ['REINDEX DATABASE repobase', denied()],
    ['REINDEX SYSTEM repobase', denied()],
    ['CREATE EXTENSION dblink', denied()],
    ['CREATE EXTENSION IF NOT EXISTS postgis SCHEMA "alice/sales"', denied()],
    ['ALTER EXTENSION plpgsql UPDATE', denied()],
    ['DROP EXTENSION plpgsql', denied()],
    ['COMMENT ON EXTENSION plpgsql IS \'x\'', denied()],
    ['ALTER FUNCTION "alice/sales".f() DEPENDS ON EXTENSION plpgsql', denied()],
    ["CREATE TABLESPACE ts LOCATION '/tmp/ts'", denied()],
    ['ALTER TABLESPACE pg_default SET (seq_page_cost = 1)', denied()],
    ['DROP TABLESPACE ts', denied()],
    ['ALTER TABLE ALL IN TABLESPACE pg_default SET TABLESPACE x', denied()],
    ["CREATE SUBSCRIPTION s CONNECTION 'host=x' PUBLICATION p", denied()],
    ['CREATE PUBLICATION p FOR ALL TABLES', denied()],
    ['ALTER PUBLICATION p ADD TABLE "alice/sales".t', denied()],
    ['DROP PUBLICATION p', denied()],
    ['DROP SUBSCRIPTION s', denied()],
    ['CREATE FOREIGN DATA WRAPPER w', denied()],
    ['CREATE SERVER s FOREIGN DATA WRAPPER w', denied()],
    ['CREATE USER MAPPING FOR alice SERVER s', denied()],
    ['IMPORT FOREIGN SCHEMA x FROM SERVER s INTO "alice/sales"', denied()],
    ['CREATE FOREIGN TABLE "alice/sales".f (a int) SERVER s', denied()],
    ['DROP SERVER s', denied()],
    ['CREATE LANGUAGE plperl', denied()],
    ['DROP LANGUAGE plpgsql', denied()],
    ['CREATE EVENT TRIGGER e ON ddl_command_start EXECUTE FUNCTION f()', denied()],
    ['ALTER EVENT TRIGGER e DISABLE', denied()],
    ['CREATE ACCESS METHOD am TYPE TABLE HANDLER heap_tableam_handler', denied()],
    ['CREATE OPERATOR CLASS c FOR TYPE int USING btree AS OPERATOR 1 <', unsupported],
    ["SECURITY LABEL ON TABLE \"alice/sales\".t IS 'x'", unsupported],
  ]);
});

describe('server files and SQL given as text', () => {
  table([
    ["COPY \"alice/sales\".t TO '/tmp/x'", denied()],
    ["COPY \"alice/sales\".t FROM '/etc/passwd'", denied()],
    ["COPY \"alice/sales\".t TO PROGRAM 'cat'", denied()],
    ["COPY \"alice/sales\".t FROM PROGRAM 'ls'", denied()],
    ["COPY (SELECT 1) TO '/tmp/x'", denied()],
    ["SELECT query_to_xml('select 1', true, false, '')", denied()],
    ["SELECT pg_catalog.query_to_xml_and_xmlschema('select 1', true, false, '')", denied()],
    ["SELECT query_to_xmlschema('select 1', true, false, '')", denied()],
    ["SELECT cursor_to_xml('c', 1, true, false, '')", denied()],
    ["SELECT table_to_xml('\"alice/sales\".t', true, false, '')", denied()],
    ["SELECT schema_to_xml('alice/sales', true, false, '')", denied()],
    ["SELECT database_to_xml(true, false, '')", denied()],
    ["SELECT * FROM dblink('host=x', 'select 1') AS t(a int)", denied()],
    ["SELECT dblink_exec('host=x', 'drop table t')", denied()],
    ["SELECT * FROM ts_stat('SELECT v FROM \"bob/secret\".t')", denied()],
    ["SELECT pg_read_file('/etc/passwd')", denied()],
    ["SELECT pg_read_binary_file('/etc/passwd', 0, 10)", denied()],
    ["SELECT * FROM pg_ls_dir('.')", denied()],
    ["SELECT pg_stat_file('postgresql.conf')", denied()],
    ["SELECT lo_import('/etc/passwd')", denied()],
    ["SELECT lo_export(1234, '/tmp/x')", denied()],
    ["SELECT \"alice/sales\".query_to_xml(1)", allow],
    // Postgres lets a role signal only its own backends: each user is its own role.
    ['SELECT pg_terminate_backend(1234)', rewrite('SELECT repobase_catalog.pg_terminate_backend(1234)')],
    ['SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = current_user', rewrite('SELECT repobase_catalog.pg_cancel_backend(pid) FROM repobase_catalog.pg_stat_activity WHERE usename = current_user')],
  ]);
});

describe('repos in SQL', () => {
  table([
    ['CREATE SCHEMA "alice/new"', create('new')],
    ['CREATE SCHEMA IF NOT EXISTS "alice/new"', create('new', true)],
    ['create schema "alice/My-Repo.v2"', create('My-Repo.v2')],
    ['CREATE SCHEMA "alice/x" AUTHORIZATION alice', create('x')],
    ['CREATE SCHEMA "alice/x" AUTHORIZATION CURRENT_USER', create('x')],
    ['CREATE SCHEMA "alice/x" AUTHORIZATION bob', denied()],
    ['CREATE SCHEMA AUTHORIZATION alice', denied('alice')],
    ['CREATE SCHEMA "bob/x"', denied()],
    ['CREATE SCHEMA "Alice/x"', denied()],
    ['CREATE SCHEMA foo', denied('foo')],
    ['CREATE SCHEMA "alice/bad name"', deny('42602', 'bad name')],
    ['CREATE SCHEMA "alice/"', deny('42602')],
    ['CREATE SCHEMA "alice/a/b"', deny('42602', 'a/b')],
    ['CREATE SCHEMA "alice/.."', deny('42602', '..')],
    [`CREATE SCHEMA "alice/${'r'.repeat(50)}"`, create('r'.repeat(50))],
    ['CREATE SCHEMA "alice/x" CREATE TABLE t (a int)', unsupported],
    ['CREATE SCHEMA "alice/x"; SELECT 1', unsupported],
    ['SELECT 1; DROP SCHEMA "alice/x"', unsupported],
    ['DROP SCHEMA "alice/sales"', drop('sales')],
    ['DROP SCHEMA IF EXISTS "alice/x" CASCADE', drop('x', true, true)],
    ['DROP SCHEMA "bob/secret"', denied('bob/secret')],
    ['DROP SCHEMA "bob/nothing"', denied('bob/nothing')],
    ['DROP SCHEMA "carol/shared"', denied('carol/shared')],
    ['DROP SCHEMA public', denied('public')],
    ['DROP SCHEMA "alice/a", "alice/b"', unsupported],
    ['ALTER SCHEMA "alice/sales" RENAME TO "alice/x"', unsupported],
  ]);

  test('the command tag is the one Postgres would send', async () => {
    expect(await decide('CREATE SCHEMA "alice/new"')).toMatchObject({ kind: 'handled', commandTags: ['CREATE SCHEMA'] });
    expect(await decide('DROP SCHEMA "alice/new"')).toMatchObject({ kind: 'handled', commandTags: ['DROP SCHEMA'] });
  });

  test('a schema that is not a repo gets a hint to create one', async () => {
    const d = await decide('CREATE SCHEMA foo');
    expect(d.kind === 'deny' && d.error.hint).toBe('CREATE SCHEMA "alice/foo"');
  });
});

describe('LISTEN/NOTIFY channels are per user', () => {
  table([
    ['LISTEN "alice/events"', allow],
    ['LISTEN events', rewrite('LISTEN "alice/events"')],
    ['listen /* c */ "Mixed Case"; SELECT 1', rewrite('listen /* c */ "alice/Mixed Case"; SELECT 1')],
    ["NOTIFY \"alice/x\", 'hi'", allow],
    ["NOTIFY bobchannel, 'hi'", rewrite('NOTIFY "alice/bobchannel", \'hi\'')],
    ['NOTIFY "bob/x"', rewrite('NOTIFY "alice/bob/x"')],
    ['UNLISTEN news', rewrite('UNLISTEN "alice/news"')],
    // With catalog reads redirected in the same string: both rewrites, each where its text went.
    ["SELECT count(*) FROM pg_class; NOTIFY news, 'x'; SELECT pg_notify('news', 'y'); LISTEN \"alice/news\"; UNLISTEN other", rewrite("SELECT count(*) FROM repobase_catalog.pg_class; NOTIFY \"alice/news\", 'x'; SELECT repobase_catalog.pg_notify('news', 'y'); LISTEN \"alice/news\"; UNLISTEN \"alice/other\"")],
    ["NOTIFY chb; SELECT currval(pg_get_serial_sequence('items', 'id'))", rewrite("NOTIFY \"alice/chb\"; SELECT repobase_catalog.currval(pg_get_serial_sequence('items', 'id'))")],
    ['UNLISTEN *', allow],
    ["SELECT pg_notify('alice/x', 'p')", rewrite("SELECT repobase_catalog.pg_notify('alice/x', 'p')")],
    ["SELECT pg_catalog.pg_notify('x', 'p')", rewrite("SELECT repobase_catalog.pg_notify('x', 'p')")],
    ["SELECT pg_notify($1, 'p')", rewrite("SELECT repobase_catalog.pg_notify($1, 'p')")],
    // The service's channels stay out of reach; names must fit with the prefix.
    ['LISTEN repobase_cancel', denied()],
    ["NOTIFY repobase_schema, 'x'", denied()],
    [`LISTEN ${'x'.repeat(60)}`, deny('22023')],
    // Bodies run later: there the channel must be named in the user's namespace already.
    ["CREATE FUNCTION \"alice/sales\".f() RETURNS void LANGUAGE sql AS $$ SELECT pg_notify('alice/x', 'p') $$", allow],
    ["CREATE FUNCTION \"alice/sales\".f() RETURNS void LANGUAGE sql AS $$ SELECT pg_notify('x', 'p') $$", denied('x')],
    ['LISTEN x; SELECT * FROM pg_class', rewrite('LISTEN "alice/x"; SELECT * FROM repobase_catalog.pg_class')],
  ]);
});

describe("pg_backend_pid() shows a wire client its own process id (the stand-in reads it from a setting)", () => {
  table([
    ['SELECT pg_backend_pid()', rewrite('SELECT repobase_catalog.pg_backend_pid()')],
    ['SELECT pg_catalog.pg_backend_pid() AS me', rewrite('SELECT repobase_catalog.pg_backend_pid() AS me')],
    ['SELECT pg_terminate_backend(pg_backend_pid())', rewrite('SELECT repobase_catalog.pg_terminate_backend(repobase_catalog.pg_backend_pid())')],
    ['SELECT pg_catalog.pg_cancel_backend($1)', rewrite('SELECT repobase_catalog.pg_cancel_backend($1)')],
    ['SELECT * FROM pg_listening_channels()', rewrite('SELECT * FROM repobase_catalog.pg_listening_channels()')],
    // A body runs later: its call is left as it is (the backend's own id).
    ['CREATE FUNCTION "alice/sales".f() RETURNS int LANGUAGE sql AS $$ SELECT pg_backend_pid() $$', allow],
  ]);
});

test('a LISTEN by the "<user>/…" name is reported, so notifications keep that name', async () => {
  const d = await decide('LISTEN "alice/events"; LISTEN other');
  expect(d.kind === 'rewrite' && d.listens).toEqual(['alice/events']);
});

describe('harmless statements', () => {
  table([
    ['BEGIN', allow],
    ['START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY', allow],
    ['SAVEPOINT a', allow],
    ['RELEASE SAVEPOINT a', allow],
    ['ROLLBACK TO SAVEPOINT a', allow],
    ['COMMIT', allow],
    ['ROLLBACK', allow],
    ['SET TRANSACTION READ ONLY', allow],
    ['SHOW search_path', allow],
    ['SHOW ALL', allow],
    ["SET statement_timeout = '5s'", allow],
    ["SET TIME ZONE 'UTC'", allow],
    ["SET client_encoding = 'UTF8'", allow],
    ['RESET statement_timeout', allow],
    ['DISCARD PLANS', allow],
    ['FETCH 10 FROM c', allow],
    ['CLOSE c', allow],
    ['DEALLOCATE ALL', allow],
    ['SET CONSTRAINTS ALL DEFERRED', allow],
    ['SELECT pg_sleep(0), version(), current_setting(\'search_path\')', allow],
    ["SELECT set_config('statement_timeout', '1s', false)", allow],
    ['SELECT pg_advisory_lock(1)', allow],
  ]);
});

describe('session changes', () => {
  const readonlyDefault: Session = { searchPath: ['alice/sales'], defaultSearchPath: ['alice/sales'] };
  table([
    ['SET search_path = "alice/sales", public', changes({ kind: 'search_path', value: ['alice/sales', 'public'] })],
    ['SET search_path TO "dave/readonly"', changes({ kind: 'search_path', value: ['dave/readonly'] })],
    ["SET search_path = '$user', public", changes({ kind: 'search_path', value: ['$user', 'public'] })],
    ['SET search_path = "alice/newrepo"', changes({ kind: 'search_path', value: ['alice/newrepo'] })],
    ['SET search_path = pg_catalog, "erin/public", pg_temp', changes({ kind: 'search_path', value: ['pg_catalog', 'erin/public', 'pg_temp'] })],
    ['SET search_path = "bob/secret"', denied('bob/secret')],
    ['SET SEARCH_PATH = "alice/sales", "bob/secret"', denied('bob/secret')],
    ['SET search_path = foo', denied('foo')],
    ["SET SCHEMA 'bob/secret'", denied('bob/secret')],
    ['SET search_path TO DEFAULT', changes({ kind: 'reset_search_path' })],
    ['RESET search_path', changes({ kind: 'reset_search_path' })],
    ['RESET ALL', changes({ kind: 'reset_search_path' })],
    ['DISCARD ALL', changes({ kind: 'reset_search_path' })],
    ['SET search_path FROM CURRENT', changes()],
    ['SET LOCAL search_path = "alice/sales"', changes({ kind: 'search_path', value: ['alice/sales'], local: true })],
    ['SET LOCAL search_path TO DEFAULT', changes({ kind: 'reset_search_path', local: true })],
    ['SET LOCAL search_path = "bob/secret"', denied('bob/secret')],
    ['BEGIN; SET LOCAL search_path = "dave/readonly"; COMMIT; INSERT INTO t VALUES (1)', changes(
      { kind: 'search_path', value: ['dave/readonly'], local: true },
      { kind: 'transaction_end', commit: true },
    )],
    ['BEGIN; SET LOCAL search_path = "dave/readonly"; INSERT INTO t VALUES (1)', denied('dave/readonly')],
    ["SELECT set_config('search_path', '\"alice/sales\", public', false)", changes({ kind: 'search_path', value: ['alice/sales', 'public'] })],
    ["SELECT pg_catalog.set_config('search_path', '', false)", changes({ kind: 'search_path', value: [] })],
    ["SELECT set_config('search_path', '\"alice/sales\"', true)", changes({ kind: 'search_path', value: ['alice/sales'], local: true })],
    ["SELECT set_config('search_path', 'x', true)", denied('x')],
    ["SELECT set_config('search_path', 'bob/secret', false)", denied('bob/secret')],
    ['SET search_path = "carol/shared"; CREATE TABLE t (a int)', denied('carol/shared')],
    ['SET search_path = "alice/empty"; CREATE TABLE t (a int)', changes({ kind: 'search_path', value: ['alice/empty'] })],
    ['SET search_path = "dave/readonly"; SET search_path = "alice/sales"; INSERT INTO t VALUES (1)', changes(
      { kind: 'search_path', value: ['dave/readonly'] },
      { kind: 'search_path', value: ['alice/sales'] },
    )],
    // public holds nothing: a name is found earlier on the path, or nowhere (Postgres says 42P01).
    ['RESET search_path; SELECT * FROM t', changes({ kind: 'reset_search_path' })],
    ['SET search_path = "alice/sales", public; INSERT INTO t VALUES (1); CREATE TABLE t2 (a int)', changes({ kind: 'search_path', value: ['alice/sales', 'public'] })],
    ['SET search_path = public, "alice/sales"; SELECT * FROM t', changes({ kind: 'search_path', value: ['public', 'alice/sales'] })],
    ['SET search_path = public, "alice/sales"; CREATE TABLE t2 (a int)', denied('public')],
    ['SET search_path = "dave/readonly", public; INSERT INTO t VALUES (1)', denied('dave/readonly')],
    ['SELECT * FROM public.t', denied('public')],
    ['RESET search_path; SELECT * FROM t', changes({ kind: 'reset_search_path' }), readonlyDefault],
  ]);
});

describe('where a refused statement starts in a multi-statement string', () => {
  const at = async (sql: string): Promise<number | undefined> => {
    const d = await decide(sql);
    expect(d.kind).toBe('deny');
    return d.kind === 'deny' ? d.refusedAt : undefined;
  };

  test('after allowed statements: their end, so they can run first', async () => {
    const sql = 'INSERT INTO "alice/sales".t VALUES (1); SELECT * FROM "bob/secret".x';
    expect(sql.slice(0, await at(sql))).toBe('INSERT INTO "alice/sales".t VALUES (1);');
    const unicode = "SELECT 'ü😀'; SELECT * FROM \"bob/secret\".x";
    expect(unicode.slice(0, await at(unicode))).toBe("SELECT 'ü😀';");
  });

  test('absent when nothing may run ahead of it', async () => {
    expect(await at('SELECT * FROM "bob/secret".x; SELECT 1')).toBeUndefined(); // it is the first
    expect(await at('SELECT 1; SELEC 2')).toBeUndefined(); // the whole string does not parse
    expect(await at('SET search_path = "alice/sales"; SELECT * FROM "bob/secret".x')).toBeUndefined(); // the session changed
    expect(await at('ALTER TABLE "alice/sales".t ALTER c TYPE int; SELECT * FROM "bob/secret".x')).toBeUndefined(); // rewritten
  });
});
