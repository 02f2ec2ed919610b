/**
 * The seed walkthrough through `POST /api/v1beta/query/`, each answer checked field by field,
 * and the value encoding of DESIGN.md §3 checked on the exact text of the answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let alice: { name: string; key: string };
let t: string;

beforeAll(async () => {
  srv = await startRest();
  alice = await srv.user('alice');
  t = `"${alice.name}/seed"."Orders 2024"`;
});

afterAll(async () => {
  await srv?.stop();
});

async function ok(sql: string) {
  const r = await srv.query(alice.key, sql);
  expect(r.body.error, sql).toBeUndefined();
  expect(r.status, sql).toBe(200);
  expect(r.body.query_string).toBe(sql);
  return r;
}

describe('the seed walkthrough over REST', () => {
  it('creates the repo with CREATE SCHEMA (done by the control plane) and lists it', async () => {
    const r = await ok(`CREATE SCHEMA "${alice.name}/seed"`);
    expect(r.body).toEqual({ query_string: `CREATE SCHEMA "${alice.name}/seed"`, fields: {}, data: [], command: 'CREATE SCHEMA', row_count: null });
    const list = await srv.call(alice.key, 'GET', '/repos/');
    expect(list.status).toBe(200);
    const repos = ((await list.json()) as { repos: { name: string; owner: string; repo: string; is_private: boolean; description: string }[] }).repos;
    expect(repos).toEqual([expect.objectContaining({ name: `${alice.name}/seed`, owner: alice.name, repo: 'seed', is_private: true, description: '' })]);
  });

  it('creates a table with a space in its name and fills it', async () => {
    const created = await ok(`CREATE TABLE ${t} ("n" integer, "code" text)`);
    expect(created.body).toMatchObject({ fields: {}, data: [], command: 'CREATE TABLE', row_count: null });
    const inserted = await ok(`INSERT INTO ${t} VALUES (1, '007'), (6, '12'), (9, '9007199254740993')`);
    expect(inserted.body).toMatchObject({ fields: {}, data: [], command: 'INSERT', row_count: 3 });
  });

  it('SELECT count(*) is typed BIGINT', async () => {
    const r = await ok(`SELECT count(*) FROM ${t}`);
    expect(r.body).toEqual({ query_string: `SELECT count(*) FROM ${t}`, fields: { count: 'BIGINT' }, data: [[3]], command: 'SELECT', row_count: 1 });
  });

  it('adds a boolean column and fills it from an expression', async () => {
    expect((await ok(`ALTER TABLE ${t} ADD COLUMN "big one" boolean`)).body).toMatchObject({ command: 'ALTER TABLE', row_count: null, fields: {}, data: [] });
    expect((await ok(`UPDATE ${t} SET "big one" = "n" > 5`)).body).toMatchObject({ command: 'UPDATE', row_count: 3 });
    const r = await ok(`SELECT "n", "big one" FROM ${t} ORDER BY "n"`);
    expect(r.body.fields).toEqual({ n: 'INTEGER', 'big one': 'BOOLEAN' });
    expect(r.body.data).toEqual([
      [1, false],
      [6, true],
      [9, true],
    ]);
  });

  it('renames the column', async () => {
    expect((await ok(`ALTER TABLE ${t} RENAME COLUMN "big one" TO "large"`)).body).toMatchObject({ command: 'ALTER TABLE' });
    const detail = await srv.call(alice.key, 'GET', `/repos/${alice.name}/seed/`);
    const body = (await detail.json()) as { tables: { name: string; columns: { name: string; type: string }[] }[] };
    expect(body.tables).toMatchObject([
      {
        name: 'Orders 2024',
        columns: [
          { name: 'n', type: 'INTEGER' },
          { name: 'code', type: 'TEXT' },
          { name: 'large', type: 'BOOLEAN' },
        ],
      },
    ]);
  });

  it('SET DATA TYPE BIGINT without USING converts a text column of digits by itself', async () => {
    const r = await ok(`ALTER TABLE ${t} ALTER COLUMN "code" SET DATA TYPE BIGINT`);
    expect(r.body).toMatchObject({ command: 'ALTER TABLE', fields: {}, data: [] });
    const sel = await ok(`SELECT "code" FROM ${t} ORDER BY "n"`);
    expect(sel.body.fields).toEqual({ code: 'BIGINT' });
    // The exact digits, not a float: 9007199254740993 is not a double.
    expect(sel.text).toContain('"data":[[7],[12],[9007199254740993]]');
  });

  it('SET DATA TYPE … USING 0 takes the constant', async () => {
    await ok(`ALTER TABLE ${t} ALTER COLUMN "large" SET DATA TYPE integer USING 0`);
    const sel = await ok(`SELECT "n", "large" FROM ${t} ORDER BY "n"`);
    expect(sel.body.fields).toEqual({ n: 'INTEGER', large: 'INTEGER' });
    expect(sel.body.data).toEqual([
      [1, 0],
      [6, 0],
      [9, 0],
    ]);
  });

  it('drops the column', async () => {
    expect((await ok(`ALTER TABLE ${t} DROP COLUMN "large"`)).body).toMatchObject({ command: 'ALTER TABLE', row_count: null });
    const sel = await ok(`SELECT * FROM ${t} ORDER BY "n"`);
    expect(sel.body.fields).toEqual({ n: 'INTEGER', code: 'BIGINT' });
    expect(sel.text).toContain('"data":[[1,7],[6,12],[9,9007199254740993]]');
  });
});

describe('the value encoding', () => {
  it('writes numbers with exactly the digits Postgres printed', async () => {
    const r = await ok(`SELECT 9007199254740993::int8 AS i, 0.1000000000000000055511151231257827::numeric AS n, 12.50::numeric(10,2) AS m, 0.1::float8 AS f,
                               'NaN'::float8 AS nan, 'Infinity'::numeric AS inf, '-Infinity'::float4 AS ninf, 32767::int2 AS s`);
    expect(r.body.fields).toEqual({ i: 'BIGINT', n: 'NUMERIC', m: 'NUMERIC(10,2)', f: 'DOUBLE PRECISION', nan: 'DOUBLE PRECISION', inf: 'NUMERIC', ninf: 'REAL', s: 'SMALLINT' });
    expect(r.text).toContain('"data":[[9007199254740993,0.1000000000000000055511151231257827,12.50,0.1,"NaN","Infinity","-Infinity",32767]]');
  });

  it('NULL vs empty string, booleans, json, arrays, timestamps', async () => {
    const r = await ok(`SELECT NULL::text AS a, ''::text AS b, true AS c, '{"k": [1, 2.50, null]}'::jsonb AS d, '[1, "x"]'::json AS e,
                               ARRAY['x', NULL, '', 'q"uote'] AS f, ARRAY[[1,2],[3,4]] AS g, ARRAY[9007199254740993]::int8[] AS h,
                               '2024-01-02 03:04:05+00'::timestamptz AT TIME ZONE 'UTC' AS i, '1 day'::interval AS j, ARRAY[true, false] AS k`);
    expect(r.body.fields).toEqual({
      a: 'TEXT',
      b: 'TEXT',
      c: 'BOOLEAN',
      d: 'JSONB',
      e: 'JSON',
      f: 'TEXT[]',
      g: 'INTEGER[]',
      h: 'BIGINT[]',
      i: 'TIMESTAMP WITHOUT TIME ZONE',
      j: 'INTERVAL',
      k: 'BOOLEAN[]',
    });
    expect(r.text).toContain(
      '"data":[[null,"",true,{"k": [1, 2.50, null]},[1, "x"],["x",null,"","q\\"uote"],[[1,2],[3,4]],[9007199254740993],"2024-01-02 03:04:05","1 day",[true,false]]]',
    );
  });

  it('makes duplicate column names unique so rows stay aligned', async () => {
    const r = await ok('SELECT 1, 2, 3 AS "?column?_2"');
    expect(r.body.fields).toEqual({ '?column?': 'INTEGER', '?column?_3': 'INTEGER', '?column?_2': 'INTEGER' });
    expect(r.body.data).toEqual([[1, 2, 3]]);
  });

  it('types: TIMESTAMP WITH TIME ZONE, VARCHAR(n), user enums and domains', async () => {
    await ok(`CREATE TYPE "${alice.name}/seed".mood AS ENUM ('ok', 'meh')`);
    await ok(`CREATE DOMAIN "${alice.name}/seed".money2 AS numeric(12,2)`);
    const r = await ok(`SELECT now() AS a, 'x'::varchar(5) AS b, 'ok'::"${alice.name}/seed".mood AS c, 1.5::"${alice.name}/seed".money2 AS d`);
    // Postgres describes a domain-typed result column by its base type.
    expect(r.body.fields).toEqual({ a: 'TIMESTAMP WITH TIME ZONE', b: 'CHARACTER VARYING(5)', c: `"${alice.name}/seed".MOOD`, d: 'NUMERIC(12,2)' });
    expect(r.text).toMatch(/,"x","ok",1\.50\]\]/);
  });

  it('answers a statement without rows with fields {} and data []', async () => {
    const r = await ok(`DELETE FROM ${t} WHERE false`);
    expect(r.body).toEqual({ query_string: `DELETE FROM ${t} WHERE false`, fields: {}, data: [], command: 'DELETE', row_count: 0 });
  });

  it('refuses more than one statement, and none', async () => {
    const two = await srv.query(alice.key, 'SELECT 1; SELECT 2');
    expect(two.status).toBe(400);
    expect(two.body.error).toMatchObject({ code: '42601', message: expect.stringContaining('one statement per request') });
    expect(two.body.query_string).toBe('SELECT 1; SELECT 2');
    const none = await srv.query(alice.key, '  -- nothing');
    expect(none.status).toBe(400);
    expect(none.body.error?.code).toBe('42601');
  });

  it('reports a syntax error with its position', async () => {
    const r = await srv.query(alice.key, 'SELECT FROM WHERE');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: '42601', position: expect.any(Number) });
  });

  it('answers 404 for an unknown table and 409 for a unique violation', async () => {
    const missing = await srv.query(alice.key, `SELECT * FROM "${alice.name}/seed"."nope"`);
    expect(missing.status).toBe(404);
    expect(missing.body.error?.code).toBe('42P01');
    await ok(`CREATE TABLE "${alice.name}/seed".u (id int PRIMARY KEY)`);
    await ok(`INSERT INTO "${alice.name}/seed".u VALUES (1)`);
    const dup = await srv.query(alice.key, `INSERT INTO "${alice.name}/seed".u VALUES (1)`);
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: '23505', detail: 'Key (id)=(1) already exists.' });
  });

  it('DROP SCHEMA of a repo with tables needs CASCADE; then the repo is gone', async () => {
    await ok(`CREATE SCHEMA "${alice.name}/tmp"`);
    await ok(`CREATE TABLE "${alice.name}/tmp".x (id int)`);
    const refused = await srv.query(alice.key, `DROP SCHEMA "${alice.name}/tmp"`);
    expect(refused.status).toBe(409);
    expect(refused.body.error?.code).toBe('2BP01');
    expect((await ok(`DROP SCHEMA "${alice.name}/tmp" CASCADE`)).body.command).toBe('DROP SCHEMA');
    expect(await srv.control.getRepo({ owner: alice.name, repo: 'tmp' })).toBeUndefined();
    expect((await ok(`DROP SCHEMA IF EXISTS "${alice.name}/tmp"`)).body.command).toBe('DROP SCHEMA');
  });
});
