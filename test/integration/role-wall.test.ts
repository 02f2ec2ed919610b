/**
 * The second wall, at the Postgres level: connected directly upstream as a user's own role
 * (with its derived password), with no repobase front end in between.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolePassword } from '../../src/upstream/roles.js';
import { testEnv, type TestEnv } from '../helpers/cluster.js';

let env: TestEnv;
let alice: string;
let bob: string;
let carol: string;
const clients: pg.Client[] = [];

async function connectAs(role: string): Promise<pg.Client> {
  const client = new pg.Client(env.cluster.roleConnection(role));
  await client.connect();
  clients.push(client);
  return client;
}

async function sqlstate(client: pg.Client, sql: string): Promise<string | undefined> {
  try {
    await client.query(sql);
    return undefined;
  } catch (err: unknown) {
    return (err as { code?: string }).code;
  }
}

beforeAll(async () => {
  env = await testEnv();
  alice = env.name('alice');
  bob = env.name('bob');
  carol = env.name('carol');
  for (const u of [alice, bob, carol]) await env.control.createUser(u);
  await env.control.createRepo({ owner: bob, repo: 'secret' });
  const bobDb = await connectAs(bob);
  await bobDb.query(`CREATE TABLE "${bob}/secret".t (id int, v text)`);
  await bobDb.query(`INSERT INTO "${bob}/secret".t VALUES (1, 'classified')`);
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await env.close();
});

describe('a user role upstream', () => {
  it('logs in with the password derived from the server secret, and not with another', async () => {
    const db = await connectAs(alice);
    const who = await db.query('SELECT current_user, session_user');
    expect(who.rows[0]).toEqual({ current_user: alice, session_user: alice });
    const wrong = new pg.Client({ ...env.cluster.roleConnection(alice), password: rolePassword('another secret', alice) });
    await expect(wrong.connect()).rejects.toMatchObject({ code: '28P01' });
  });

  it('has none of the dangerous role attributes', async () => {
    const res = await env.cluster.admin.query(
      'SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = $1',
      [alice],
    );
    expect(res.rows[0]).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false, rolcanlogin: true });
  });

  it('cannot read a private repo of another user', async () => {
    const db = await connectAs(alice);
    expect(await sqlstate(db, `SELECT * FROM "${bob}/secret".t`)).toBe('42501');
  });

  it('cannot create a schema', async () => {
    const db = await connectAs(alice);
    expect(await sqlstate(db, `CREATE SCHEMA "${alice}/sneaky"`)).toBe('42501');
  });

  it('cannot read the control plane', async () => {
    const db = await connectAs(alice);
    expect(await sqlstate(db, 'SELECT * FROM _repobase.api_keys')).toBe('42501');
    expect(await sqlstate(db, 'SELECT * FROM _repobase.users')).toBe('42501');
  });

  it('cannot create objects in public', async () => {
    const db = await connectAs(alice);
    expect(await sqlstate(db, 'CREATE TABLE public.t (id int)')).toBe('42501');
    expect(await sqlstate(db, 'CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$')).toBe('42501');
  });

  it('owns its own repo: creates, writes and reads tables there', async () => {
    await env.control.createRepo({ owner: alice, repo: 'mine' });
    const db = await connectAs(alice);
    await db.query(`CREATE TABLE "${alice}/mine"."Orders 2024" (n int)`);
    await db.query(`INSERT INTO "${alice}/mine"."Orders 2024" VALUES (1), (2)`);
    const res = await db.query(`SELECT count(*)::int AS n FROM "${alice}/mine"."Orders 2024"`);
    expect(res.rows[0]).toEqual({ n: 2 });
  });

  it('reads but cannot write a public repo, including tables created after it was made public', async () => {
    await env.control.createRepo({ owner: bob, repo: 'pub' }, { isPrivate: false });
    const bobDb = await connectAs(bob);
    await bobDb.query(`CREATE TABLE "${bob}/pub".later (id int)`);
    await bobDb.query(`INSERT INTO "${bob}/pub".later VALUES (7)`);
    const db = await connectAs(alice);
    expect((await db.query(`SELECT id FROM "${bob}/pub".later`)).rows).toEqual([{ id: 7 }]);
    expect(await sqlstate(db, `INSERT INTO "${bob}/pub".later VALUES (8)`)).toBe('42501');
    expect(await sqlstate(db, `DELETE FROM "${bob}/pub".later`)).toBe('42501');
    expect(await sqlstate(db, `CREATE TABLE "${bob}/pub".mine (id int)`)).toBe('42501');
  });

  it('loses read access when a public repo turns private', async () => {
    await env.control.createRepo({ owner: bob, repo: 'flip' }, { isPrivate: false });
    const bobDb = await connectAs(bob);
    await bobDb.query(`CREATE TABLE "${bob}/flip".t (id int)`);
    const db = await connectAs(alice);
    expect(await sqlstate(db, `SELECT * FROM "${bob}/flip".t`)).toBeUndefined();
    await env.control.updateRepo({ owner: bob, repo: 'flip' }, { isPrivate: true });
    expect(await sqlstate(db, `SELECT * FROM "${bob}/flip".t`)).toBe('42501');
  });

  it('as a read collaborator reads but does not write; as a write collaborator inserts but does not alter', async () => {
    await env.control.createRepo({ owner: bob, repo: 'shared' });
    const bobDb = await connectAs(bob);
    await bobDb.query(`CREATE TABLE "${bob}/shared".t (id serial, v text)`);
    const a = await connectAs(alice);
    const c = await connectAs(carol);
    await env.control.setCollaborator({ owner: bob, repo: 'shared' }, alice, 'read');
    await env.control.setCollaborator({ owner: bob, repo: 'shared' }, carol, 'write');
    expect(await sqlstate(a, `SELECT * FROM "${bob}/shared".t`)).toBeUndefined();
    expect(await sqlstate(a, `INSERT INTO "${bob}/shared".t (v) VALUES ('no')`)).toBe('42501');
    expect(await sqlstate(c, `INSERT INTO "${bob}/shared".t (v) VALUES ('yes')`)).toBeUndefined();
    expect(await sqlstate(c, `UPDATE "${bob}/shared".t SET v = 'still yes'`)).toBeUndefined();
    expect(await sqlstate(c, `ALTER TABLE "${bob}/shared".t ADD COLUMN x int`)).toBe('42501');
    expect(await sqlstate(c, `DROP TABLE "${bob}/shared".t`)).toBe('42501');
    // A table created after the grant is covered by the default privileges.
    await bobDb.query(`CREATE TABLE "${bob}/shared".t2 (id int)`);
    expect(await sqlstate(c, `INSERT INTO "${bob}/shared".t2 VALUES (1)`)).toBeUndefined();
    expect(await sqlstate(a, `SELECT * FROM "${bob}/shared".t2`)).toBeUndefined();
    // Removing the collaborator takes everything back.
    await env.control.removeCollaborator({ owner: bob, repo: 'shared' }, carol);
    expect(await sqlstate(c, `SELECT * FROM "${bob}/shared".t`)).toBe('42501');
    // Downgrading write → read keeps reading only.
    await env.control.setCollaborator({ owner: bob, repo: 'shared' }, carol, 'write');
    await env.control.setCollaborator({ owner: bob, repo: 'shared' }, carol, 'read');
    expect(await sqlstate(c, `SELECT * FROM "${bob}/shared".t`)).toBeUndefined();
    expect(await sqlstate(c, `INSERT INTO "${bob}/shared".t (v) VALUES ('no')`)).toBe('42501');
  });

  it('cannot take over another role', async () => {
    const db = await connectAs(alice);
    expect(await sqlstate(db, `SET ROLE "${bob}"`)).toBe('42501');
    expect(await sqlstate(db, `SET SESSION AUTHORIZATION "${bob}"`)).toBe('42501');
    expect(await sqlstate(db, `ALTER ROLE "${bob}" PASSWORD 'x'`)).toBe('42501');
    expect(await sqlstate(db, `CREATE ROLE evil`)).toBe('42501');
  });
});
