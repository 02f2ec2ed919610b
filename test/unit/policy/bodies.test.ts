// Function bodies and DO blocks: their static statements are checked like top-level ones.
import { describe } from 'vitest';
import { allow, deny, denied, table, unsupported } from './expect.js';

const sqlFn = (body: string, extra = ''): string => `CREATE FUNCTION "alice/sales".f() RETURNS int LANGUAGE sql ${extra} AS $fn$ ${body} $fn$`;
const plFn = (body: string, decl = '', extra = ''): string =>
  `CREATE OR REPLACE FUNCTION "alice/sales".f(x int) RETURNS int LANGUAGE plpgsql ${extra} AS $fn$ DECLARE ${decl} BEGIN ${body} RETURN 1; END $fn$`;

describe('LANGUAGE sql bodies', () => {
  table([
    [sqlFn('SELECT count(*) FROM "bob/secret".t'), denied('bob/secret')],
    [sqlFn('SELECT count(*) FROM "erin/public".t'), allow],
    ["CREATE FUNCTION \"alice/sales\".f() RETURNS int LANGUAGE sql AS 'SELECT 1'", allow],
    ["CREATE FUNCTION \"alice/sales\".f() RETURNS int AS 'SELECT count(*) FROM \"bob/secret\".t' LANGUAGE sql", denied('bob/secret')],
    [sqlFn('INSERT INTO "dave/readonly".t VALUES (1); SELECT 1'), denied('dave/readonly')],
    [sqlFn('SELECT 1; DELETE FROM "bob/secret".t RETURNING 1'), denied('bob/secret')],
    [sqlFn('SELECT count(*) FROM t', 'SET search_path = "bob/secret"'), denied('bob/secret')],
    [sqlFn('SELECT count(*) FROM t', 'SET search_path = "dave/readonly"'), allow],
    [sqlFn('SELEC 1'), deny('42601')],
    [sqlFn('SET ROLE bob; SELECT 1'), denied()],
    [sqlFn("SELECT query_to_xml('select 1', true, false, '')"), denied()],
    [sqlFn('CREATE SCHEMA "alice/x"'), unsupported],
    [sqlFn('DROP SCHEMA "alice/sales"'), unsupported],
    ['CREATE FUNCTION "alice/sales".f() RETURNS int BEGIN ATOMIC SELECT count(*) FROM "bob/secret".t; END', denied('bob/secret')],
    ['CREATE FUNCTION "alice/sales".f() RETURNS int BEGIN ATOMIC SELECT count(*) FROM "dave/readonly".t; END', allow],
    ['CREATE FUNCTION "alice/sales".f() RETURNS bigint RETURN (SELECT count(*) FROM "bob/secret".t)', denied('bob/secret')],
    ['CREATE PROCEDURE "alice/sales".p() BEGIN ATOMIC INSERT INTO "dave/readonly".t VALUES (1); END', denied('dave/readonly')],
    ['CREATE PROCEDURE "alice/sales".p() LANGUAGE sql AS $$ UPDATE "carol/shared".t SET a = 1 $$', allow],
    ["CREATE FUNCTION \"alice/sales\".f() RETURNS int LANGUAGE c AS 'lib', 'sym'", unsupported],
    ["CREATE FUNCTION \"alice/sales\".f() RETURNS int LANGUAGE internal AS 'int4pl'", unsupported],
    ['CREATE FUNCTION "alice/sales".f() RETURNS int LANGUAGE plpython3u AS $$ return 1 $$', unsupported],
    [sqlFn('SELECT 1', 'SET role = bob'), denied()],
    [sqlFn('SELECT 1', 'SECURITY DEFINER SET search_path = "alice/sales", pg_temp'), allow],
    ['ALTER FUNCTION "alice/sales".f() SET search_path = "alice/sales"', allow],
    ['ALTER FUNCTION "alice/sales".f() SET role = bob', denied()],
    ['ALTER FUNCTION "alice/sales".f() SET search_path = "bob/secret"', denied('bob/secret')],
    ['ALTER FUNCTION "carol/shared".f() STABLE', denied('carol/shared')],
    ['ALTER FUNCTION "alice/sales".f(int) RENAME TO g', allow],
  ]);
});

describe('PL/pgSQL bodies and DO blocks', () => {
  table([
    [plFn('INSERT INTO "bob/secret".t VALUES (x);'), denied('bob/secret')],
    [plFn('INSERT INTO "carol/shared".t VALUES (x);'), allow],
    [plFn('SELECT count(*) INTO n FROM "dave/readonly".t;', 'n int;'), allow],
    [plFn('UPDATE "dave/readonly".t SET a = x;'), denied('dave/readonly')],
    [plFn('PERFORM * FROM "bob/secret".t;'), denied('bob/secret')],
    [plFn('IF x > (SELECT max(a) FROM "bob/secret".t) THEN NULL; END IF;'), denied('bob/secret')],
    [plFn('FOR r IN SELECT * FROM "bob/secret".t LOOP NULL; END LOOP;', 'r record;'), denied('bob/secret')],
    [plFn('WHILE (SELECT count(*) FROM "bob/secret".t) > x LOOP EXIT; END LOOP;'), denied('bob/secret')],
    [plFn('OPEN c FOR SELECT * FROM "bob/secret".t;', 'c refcursor;'), denied('bob/secret')],
    [plFn('NULL;', 'c CURSOR FOR SELECT * FROM "bob/secret".t;'), denied('bob/secret')],
    [plFn('NULL;', 'n int := (SELECT count(*) FROM "bob/secret".t);'), denied('bob/secret')],
    [plFn('n := (SELECT count(*) FROM "bob/secret".t);', 'n int;'), denied('bob/secret')],
    [plFn('n = (SELECT count(*) FROM "erin/public".t);', 'n int;'), allow],
    [plFn("RAISE NOTICE '%', (SELECT count(*) FROM \"bob/secret\".t);"), denied('bob/secret')],
    [plFn('RETURN (SELECT a FROM "bob/secret".t LIMIT 1);'), denied('bob/secret')],
    [plFn('NULL;', 'r "bob/secret".t%ROWTYPE;'), denied('bob/secret')],
    [plFn('NULL;', 'c "bob/secret".t.col%TYPE;'), denied('bob/secret')],
    [plFn('NULL;', 'r "alice/sales".t%ROWTYPE; m "erin/public".mood;'), allow],
    [plFn('NULL;', 'm "bob/secret".mood;'), denied('bob/secret')],
    [plFn('CALL "bob/secret".p();'), denied('bob/secret')],
    [plFn('SET ROLE bob;'), denied()],
    [plFn('CREATE SCHEMA "alice/x";'), unsupported],
    [plFn('TRUNCATE "carol/shared".t;'), denied('carol/shared')],
    // Dynamic SQL is left to the role wall: its text is only known when it runs.
    [plFn('EXECUTE \'SELECT * FROM "bob/secret".t\';'), allow],
    [plFn("EXECUTE format('SELECT * FROM %I.t', 'bob/secret');"), allow],
    [plFn('EXECUTE \'SELECT $1\' USING (SELECT a FROM "bob/secret".t);'), denied('bob/secret')],
    // The stub compiler cannot look up v's composite type; the body is scanned for qualified names.
    [plFn('v.f := 1;', 'v "alice/sales".pair;'), allow],
    [plFn('v.f := (SELECT 1 FROM "bob/secret".t);', 'v "alice/sales".pair;'), denied('bob/secret')],
    ['CREATE FUNCTION "alice/sales".trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.changed := now(); RETURN NEW; END $$', allow],
    ['CREATE FUNCTION "alice/sales".f() RETURNS SETOF int LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT a FROM "bob/secret".t; END $$', denied('bob/secret')],
    [plFn('NULL;', '', 'SET search_path = "bob/secret"'), denied('bob/secret')],
    [plFn('INSERT INTO t VALUES (1);', '', 'SET search_path = "dave/readonly"'), denied('dave/readonly')],
    [plFn('INSERT INTO t VALUES (1);', '', 'SET search_path = "carol/shared"'), allow],
    [plFn("EXECUTE 'CREATE FUNCTION g() RETURNS int LANGUAGE sql AS ''SELECT 1''';"), allow],
    ['DO $$ BEGIN INSERT INTO "bob/secret".t VALUES (1); END $$', denied('bob/secret')],
    ['DO $$ BEGIN INSERT INTO "carol/shared".t VALUES (1); END $$', allow],
    ['DO LANGUAGE plpgsql $$ DECLARE n int; BEGIN n := (SELECT count(*) FROM "dave/readonly".t); END $$', allow],
    ["DO $$ BEGIN PERFORM set_config('role', 'bob', false); END $$", denied()],
    ['DO $$ BEGIN INSERT INTO t VALUES (1); END $$', denied('dave/readonly'), { searchPath: ['dave/readonly'] }],
    ['DO LANGUAGE plperl $$ 1 $$', unsupported],
    ['CREATE PROCEDURE "alice/sales".p() LANGUAGE plpgsql AS $$ BEGIN COMMIT; CALL "bob/secret".q(); END $$', denied('bob/secret')],
  ]);
});
