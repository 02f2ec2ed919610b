/**
 * Tenant isolation through the wire front end, by every route a statement can take: simple,
 * extended, pipelined, multi-statement, prepared then re-bound. Denials come from the policy
 * (42501 naming the repo) before anything reaches Postgres.
 */
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let carol: { name: string; key: string };
let secret: string;
const clients: pg.Client[] = [];

async function connect(who: { name: string; key: string }, database?: string): Promise<pg.Client> {
  const client = new pg.Client(svc.pgOptions(who.name, who.key, database));
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

async function code(client: pg.Client, sql: string, values?: unknown[]): Promise<string | undefined> {
  try {
    await client.query(sql, values);
    return undefined;
  } catch (err: unknown) {
    return (err as { code?: string }).code;
  }
}

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  bob = await svc.user('bob');
  carol = await svc.user('carol');
  secret = `"${alice.name}/secret"`;
  await svc.control.createRepo({ owner: alice.name, repo: 'secret' });
  await svc.control.createRepo({ owner: alice.name, repo: 'open' }, { isPrivate: false });
  await svc.control.createRepo({ owner: alice.name, repo: 'team' });
  const a = await connect(alice);
  await a.query(`CREATE TABLE ${secret}.t (id int, v text); INSERT INTO ${secret}.t VALUES (1, 'classified')`);
  await a.query(`CREATE VIEW ${secret}.v AS SELECT * FROM ${secret}.t`);
  await a.query(`CREATE FUNCTION ${secret}.f() RETURNS text LANGUAGE sql AS $$ SELECT v FROM ${secret}.t $$`);
  await a.query(`CREATE TABLE "${alice.name}/open".t (id int); INSERT INTO "${alice.name}/open".t VALUES (42)`);
  await a.query(`CREATE TABLE "${alice.name}/team".t (id int)`);
  await svc.control.setCollaborator({ owner: alice.name, repo: 'team' }, carol.name, 'write');
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc.stop();
});

describe('bob cannot reach alice\'s private repo through the wire', () => {
  const reads = (s: string) => [
    `SELECT * FROM ${s}.t`,
    `SELECT * FROM ${s}.v`,
    `SELECT ${s}.f()`,
    `WITH x AS (SELECT * FROM ${s}.t) SELECT * FROM x`,
    `SELECT (SELECT v FROM ${s}.t LIMIT 1)`,
    `SELECT 1 WHERE EXISTS (SELECT 1 FROM ${s}.t)`,
    `COPY ${s}.t TO STDOUT`,
    `COPY (SELECT * FROM ${s}.t) TO STDOUT`,
    `SELECT * FROM pg_catalog.pg_class c JOIN ${s}.t ON true`,
  ];
  const writes = (s: string) => [
    `INSERT INTO ${s}.t VALUES (2, 'x')`,
    `UPDATE ${s}.t SET v = 'x'`,
    `DELETE FROM ${s}.t`,
    `TRUNCATE ${s}.t`,
    `ALTER TABLE ${s}.t ADD COLUMN x int`,
    `DROP TABLE ${s}.t`,
    `CREATE TABLE ${s}.mine (id int)`,
  ];

  it('simple protocol: every read and write path is denied with 42501 naming the repo', async () => {
    const b = await connect(bob);
    for (const sql of [...reads(secret), ...writes(secret)]) {
      const err = await b.query(sql).then(() => undefined, (e: { code: string; message: string }) => e);
      expect(err?.code, sql).toBe('42501');
      expect(err?.message, sql).toContain(`${alice.name}/secret`);
    }
    // The session goes on after a denial.
    expect((await b.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('extended protocol (parameters) is checked too', async () => {
    const b = await connect(bob);
    expect(await code(b, `SELECT * FROM ${secret}.t WHERE id = $1`, [1])).toBe('42501');
    expect(await code(b, `INSERT INTO ${secret}.t VALUES ($1, $2)`, [3, 'x'])).toBe('42501');
    expect((await b.query('SELECT $1::int AS n', [5])).rows).toEqual([{ n: 5 }]);
  });

  it('a multi-statement string with one forbidden statement is refused whole', async () => {
    const b = await connect(bob, `${bob.name}/x`).catch(() => connect(bob));
    await svc.control.createRepo({ owner: bob.name, repo: 'own' });
    await b.query(`CREATE TABLE "${bob.name}/own".log (n int)`);
    expect(await code(b, `INSERT INTO "${bob.name}/own".log VALUES (1); SELECT * FROM ${secret}.t`)).toBe('42501');
    expect((await b.query(`SELECT count(*)::int AS n FROM "${bob.name}/own".log`)).rows).toEqual([{ n: 0 }]);
  });

  it('pipelined (postgres.js): denials land in their place, the other answers are intact', async () => {
    const sql = postgres({ ...svc.pgOptions(bob.name, bob.key), max: 1 });
    try {
      const results = await Promise.allSettled([
        sql`SELECT 1 AS n`,
        sql.unsafe(`SELECT * FROM ${secret}.t`),
        sql`SELECT 2 AS n`,
        sql.unsafe(`SELECT ${secret}.f()`),
        sql`SELECT 3 AS n`,
      ]);
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value[0]?.n : (r.reason as { code: string }).code))).toEqual([1, '42501', 2, '42501', 3]);
    } finally {
      await sql.end();
    }
  });

  it('a statement prepared while allowed cannot be re-bound after access is revoked (role wall)', async () => {
    const c = await connect(carol);
    await c.query({ name: 'peek', text: `SELECT count(*) FROM "${alice.name}/team".t WHERE id > $1`, values: [0] });
    await svc.control.removeCollaborator({ owner: alice.name, repo: 'team' }, carol.name);
    expect(await code(c, `SELECT count(*) FROM "${alice.name}/team".t WHERE id > $1`, [0])).toBe('42501');
    await c.query({ name: 'peek', text: `SELECT count(*) FROM "${alice.name}/team".t WHERE id > $1`, values: [0] }).then(
      () => expect.fail('re-bound statement must be denied'),
      (e: { code: string }) => expect(e.code).toBe('42501'),
    );
    await svc.control.setCollaborator({ owner: alice.name, repo: 'team' }, carol.name, 'write');
  });

  it('statements of a shape run while allowed (numbers inlined) are denied once access is revoked, or in a search path where they are not', async () => {
    const c = await connect(carol);
    const team = `"${alice.name}/team"`;
    for (const n of [1, 2, 3]) await c.query(`SELECT count(*) FROM ${team}.t WHERE id > ${n}`);
    await svc.control.removeCollaborator({ owner: alice.name, repo: 'team' }, carol.name);
    // The policy's denial (it names the repo), not only Postgres' own (the second wall).
    await expect(c.query(`SELECT count(*) FROM ${team}.t WHERE id > 4`)).rejects.toMatchObject({ code: '42501', message: `permission denied for repo "${alice.name}/team"` });
    await svc.control.setCollaborator({ owner: alice.name, repo: 'team' }, carol.name, 'write');
    await c.query(`SET search_path = ${team}`);
    for (const n of [1, 2, 3]) await c.query(`DELETE FROM t WHERE id > 100${n}`);
    await c.query(`SET search_path = "${alice.name}/open"`); // public: read only
    await expect(c.query('DELETE FROM t WHERE id > 1004')).rejects.toMatchObject({ code: '42501', message: expect.stringContaining(`repo "${alice.name}/open"`) });
  });

  it('sees neither catalog names of the private repo nor its data', async () => {
    const b = await connect(bob);
    const res = await b.query("SELECT relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'", [`${alice.name}/secret`]);
    // The catalogs show each user their own world (catalog-isolation.test.ts).
    expect(res.rows).toEqual([]);
    expect(await code(b, `SELECT * FROM ${secret}.t`)).toBe('42501');
    expect(await code(b, `SELECT ${secret}.f()`)).toBe('42501');
  });
});

describe('settings that decide how Postgres reads statements', () => {
  it('changed by a function: the next statements are judged as Postgres reads them with it', async () => {
    await svc.control.createRepo({ owner: bob.name, repo: 'lax' });
    const b = await connect(bob);
    await b.query(`CREATE FUNCTION "${bob.name}/lax".off() RETURNS text LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('SET %s = off', 'standard_conforming_strings'); RETURN 'x'; END $$`);
    expect((await b.query(`SELECT "${bob.name}/lax".off() AS f, current_setting('standard_conforming_strings') AS scs`)).rows).toEqual([{ f: 'x', scs: 'off' }]);
    // With the setting off, 'a\' is an unterminated string: to the check as to Postgres.
    await expect(b.query("SELECT 'a\\' AS v")).rejects.toMatchObject({ code: '42601' });
    expect((await b.query("SELECT 'a\\\\' AS v")).rows).toEqual([{ v: 'a\\' }]);
    await b.query('RESET standard_conforming_strings');
    expect((await b.query("SELECT 'a\\' AS v")).rows).toEqual([{ v: 'a\\' }]);
  });

  it('changed to a value the policy reads alike (SQL_ASCII): nothing is refused', async () => {
    const b = await connect(bob);
    await b.query("SET client_encoding = 'SQL_ASCII'");
    expect((await b.query("SELECT 'é' AS v, 'a\\' AS w")).rows).toEqual([{ v: 'é', w: 'a\\' }]);
  });
});

describe('shared repos through the wire', () => {
  it('a public repo can be read but not written', async () => {
    const b = await connect(bob);
    expect((await b.query(`SELECT id FROM "${alice.name}/open".t`)).rows).toEqual([{ id: 42 }]);
    expect(await code(b, `INSERT INTO "${alice.name}/open".t VALUES (1)`)).toBe('42501');
    expect(await code(b, `DELETE FROM "${alice.name}/open".t`)).toBe('42501');
  });

  it('a write collaborator can INSERT but not ALTER', async () => {
    const c = await connect(carol);
    expect(await code(c, `INSERT INTO "${alice.name}/team".t VALUES (7)`)).toBeUndefined();
    expect(await code(c, `ALTER TABLE "${alice.name}/team".t ADD COLUMN y int`)).toBe('42501');
    expect(await code(c, `DROP TABLE "${alice.name}/team".t`)).toBe('42501');
  });

  it('service rules hold: no role games, no server files', async () => {
    const b = await connect(bob);
    for (const sql of [`SET ROLE "${alice.name}"`, `SET SESSION AUTHORIZATION "${alice.name}"`, `SELECT set_config('role', '${alice.name}', false)`, 'CREATE ROLE x', "COPY (SELECT 1) TO '/tmp/x'", "COPY (SELECT 1) TO PROGRAM 'id'", 'CREATE DATABASE x', 'ALTER SYSTEM SET work_mem = 1']) {
      expect(await code(b, sql), sql).toMatch(/^(42501|0A000)$/);
    }
  });

  it('repos are created and dropped with CREATE/DROP SCHEMA', async () => {
    const b = await connect(bob);
    await b.query(`CREATE SCHEMA "${bob.name}/made-in-sql"`);
    expect((await svc.control.getRepo({ owner: bob.name, repo: 'made-in-sql' }))?.isPrivate).toBe(true);
    await b.query(`CREATE TABLE "${bob.name}/made-in-sql".t (id int)`);
    await b.query(`DROP SCHEMA "${bob.name}/made-in-sql" CASCADE`);
    expect(await svc.control.getRepo({ owner: bob.name, repo: 'made-in-sql' })).toBeUndefined();
    expect(await code(b, `CREATE SCHEMA "${alice.name}/not-mine"`)).toBe('42501');
  });
});
