/**
 * The second wall for scoped keys, at the Postgres level: connected directly upstream as a key's
 * own role (its derived password), with no repobase front end and no policy in between — what a
 * statement the policy wrongly allowed would meet.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyRoleName } from '../../src/control/key-roles.js';
import { LEND_COMMENT_PREFIX } from '../../src/control/key-triggers.js';
import { testEnv, type TestEnv } from '../helpers/cluster.js';

let env: TestEnv;
let alice: string;
let bob: string;
let carol: string;
let sales: string;
let other: string;
let readRole: string;
let writeRole: string;
const clients: pg.Client[] = [];

async function connectAs(role: string): Promise<pg.Client> {
  const client = new pg.Client(env.cluster.roleConnection(role));
  client.on('error', () => undefined);
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

/** `sql` with the comment the policy adds to a write key's DDL: lend these objects for the command. */
function lending(objects: Array<['r' | 'o', string, string]>, sql: string): string {
  return `${LEND_COMMENT_PREFIX}${Buffer.from(JSON.stringify(objects)).toString('base64')}*/ ${sql}`;
}

async function ownerOf(relation: string): Promise<string> {
  const res = await env.cluster.admin.query<{ owner: string }>('SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = $1::regclass', [relation]);
  return res.rows[0]!.owner;
}

/** What a role owns in the test database (a key role: nothing, between statements). */
async function owned(role: string): Promise<string[]> {
  const res = await env.cluster.admin.query<{ what: string }>(
    `SELECT pg_describe_object(classid, objid, 0) AS what FROM pg_shdepend
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND deptype = 'o' AND refobjid = $1::regrole`,
    [role],
  );
  return res.rows.map((r) => r.what);
}

beforeAll(async () => {
  env = await testEnv();
  expect(env.control.keys.canChangeStructure).toBe(true); // the test cluster's admin is a superuser
  alice = env.name('alice');
  bob = env.name('bob');
  carol = env.name('carol');
  for (const u of [alice, bob, carol]) await env.control.createUser(u);
  sales = `${alice}/sales`;
  other = `${alice}/other`;
  await env.control.createRepo({ owner: alice, repo: 'sales' });
  await env.control.createRepo({ owner: alice, repo: 'other' });
  await env.control.createRepo({ owner: bob, repo: 'pub' }, { isPrivate: false });
  await env.control.setCollaborator({ owner: alice, repo: 'sales' }, carol, 'read');
  const a = await connectAs(alice);
  await a.query(`CREATE TABLE "${sales}".orders (id serial PRIMARY KEY, amount int)`);
  await a.query(`INSERT INTO "${sales}".orders (amount) VALUES (10), (20)`);
  await a.query(`CREATE TABLE "${other}".secret (v text); INSERT INTO "${other}".secret VALUES ('classified')`);
  await a.query(`CREATE TABLE "${sales}".log (v text)`);
  // A function of alice's that writes, running with her rights.
  await a.query(`CREATE FUNCTION "${sales}".note(t text) RETURNS void LANGUAGE sql SECURITY DEFINER AS $$ INSERT INTO "${sales}".log VALUES (t) $$`);
  const b = await connectAs(bob);
  await b.query(`CREATE FUNCTION "${bob}/pub".steal() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`);
  await b.query(`CREATE FUNCTION "${bob}/pub".pick() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`);
  const read = await env.control.keys.create(alice, { name: 'dashboard', repos: [sales], access: 'read' });
  const write = await env.control.keys.create(alice, { name: 'etl', repos: [sales], access: 'write' });
  readRole = keyRoleName(alice, read.id);
  writeRole = keyRoleName(alice, write.id);
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await env?.close();
});

describe('the role of a scoped key', () => {
  it('logs in with its derived password, is a member of no role, and has no dangerous attribute', async () => {
    const db = await connectAs(readRole);
    const who = await db.query('SELECT current_user, session_user, pg_has_role(current_user, $1, \'MEMBER\') AS member', [alice]);
    expect(who.rows[0]).toEqual({ current_user: readRole, session_user: readRole, member: false });
    const attrs = await env.cluster.admin.query('SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolinherit FROM pg_roles WHERE rolname = $1', [writeRole]);
    expect(attrs.rows[0]).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false, rolinherit: false });
    const members = await env.cluster.admin.query('SELECT count(*)::int AS n FROM pg_auth_members WHERE member = $1::regrole', [writeRole]);
    expect(members.rows[0]).toEqual({ n: 0 });
    expect(await sqlstate(db, `SET ROLE "${alice}"`)).toBe('42501');
  });
});

describe('a read key', () => {
  it('reads its repo and nothing else', async () => {
    const db = await connectAs(readRole);
    expect((await db.query(`SELECT sum(amount)::int AS s FROM "${sales}".orders`)).rows).toEqual([{ s: 30 }]);
    expect(await sqlstate(db, `SELECT * FROM "${other}".secret`)).toBe('42501');
  });

  it('cannot write, even where the policy would have let a statement through', async () => {
    const db = await connectAs(readRole);
    expect(await sqlstate(db, `INSERT INTO "${sales}".orders (amount) VALUES (1)`)).toBe('25006');
    expect(await sqlstate(db, `CREATE TABLE "${sales}".mine (id int)`)).toBe('25006');
    expect(await sqlstate(db, `SELECT nextval('"${sales}".orders_id_seq')`)).toBe('42501');
    expect(await sqlstate(db, 'SELECT lo_create(0)')).toBe('25006');
    // A function of the user that writes with the user's rights fails too: the transaction is read-only.
    expect(await sqlstate(db, `SELECT "${sales}".note('from a read key')`)).toBe('25006');
    // Turning read-only off leaves the privileges: still no write.
    await db.query('SET default_transaction_read_only = off');
    expect(await sqlstate(db, `INSERT INTO "${sales}".orders (amount) VALUES (1)`)).toBe('42501');
    expect(await sqlstate(db, `UPDATE "${sales}".orders SET amount = 0`)).toBe('42501');
    expect(await sqlstate(db, `TRUNCATE "${sales}".orders`)).toBe('42501');
    expect(await sqlstate(db, `CREATE TABLE "${sales}".mine (id int)`)).toBe('42501');
    expect(await sqlstate(db, `SELECT nextval('"${sales}".orders_id_seq')`)).toBe('42501');
    await db.query('RESET default_transaction_read_only');
    const log = await env.cluster.admin.query(`SELECT count(*)::int AS n FROM "${sales}".log`);
    expect(log.rows[0]).toEqual({ n: 0 });
    expect((await env.cluster.admin.query(`SELECT sum(amount)::int AS s FROM "${sales}".orders`)).rows).toEqual([{ s: 30 }]);
  });

  it('sees only its repos (and public repos on its path) in the private catalogs', async () => {
    const db = await connectAs(readRole);
    const schemas = await db.query<{ nspname: string }>(`SELECT nspname FROM repobase_catalog.pg_namespace WHERE nspname LIKE '%/%' ORDER BY 1`);
    expect(schemas.rows.map((r) => r.nspname)).toEqual([sales]);
    const tables = await db.query<{ table_schema: string }>(`SELECT DISTINCT table_schema FROM repobase_information_schema.tables WHERE table_schema LIKE '%/%'`);
    expect(tables.rows.map((r) => r.table_schema)).toEqual([sales]);
    const hidden = await db.query(`SELECT repobase_catalog.visible_namespace($1::regnamespace, ARRAY[]::name[]) AS v`, [`"${other}"`]);
    expect(hidden.rows[0]).toEqual({ v: false });
  });
});

describe('a write key', () => {
  it('writes rows of its repo, not of another', async () => {
    const db = await connectAs(writeRole);
    await db.query(`INSERT INTO "${sales}".orders (amount) VALUES (5)`);
    await db.query(`UPDATE "${sales}".orders SET amount = amount + 1 WHERE amount = 5`);
    await db.query(`DELETE FROM "${sales}".orders WHERE amount = 6`);
    expect(await sqlstate(db, `INSERT INTO "${other}".secret VALUES ('x')`)).toBe('42501');
    expect(await sqlstate(db, `SELECT * FROM "${other}".secret`)).toBe('42501');
  });

  it('creates tables that its user owns, with the schema\'s default privileges, and owns nothing after', async () => {
    const db = await connectAs(writeRole);
    await db.query(`CREATE TABLE "${sales}".staging (id serial, v text)`);
    expect(await ownerOf(`"${sales}".staging`)).toBe(alice);
    expect(await owned(writeRole)).toEqual([]);
    // The key itself, and a read collaborator of the repo, reach it as if alice had made it.
    await db.query(`INSERT INTO "${sales}".staging (v) VALUES ('a')`);
    const c = await connectAs(carol);
    expect((await c.query(`SELECT v FROM "${sales}".staging`)).rows).toEqual([{ v: 'a' }]);
  });

  it('alters and drops its user\'s objects only with them lent for the command', async () => {
    const db = await connectAs(writeRole);
    expect(await sqlstate(db, `ALTER TABLE "${sales}".orders ADD COLUMN note text`)).toBe('42501');
    await db.query(lending([['r', sales, 'orders']], `ALTER TABLE "${sales}".orders ADD COLUMN note text`));
    expect(await ownerOf(`"${sales}".orders`)).toBe(alice);
    // What the key may do with the table (and its column's sequence) it may still do after the loan.
    await db.query(`INSERT INTO "${sales}".orders (amount, note) VALUES (7, 'after the loan')`);
    const c = await connectAs(carol);
    expect((await c.query(`SELECT count(*)::int AS n FROM "${sales}".orders WHERE note = 'after the loan'`)).rows).toEqual([{ n: 1 }]);
    await db.query(lending([['r', sales, 'orders']], `CREATE INDEX orders_amount ON "${sales}".orders (amount)`));
    await db.query(lending([['r', sales, 'orders_amount']], `DROP INDEX "${sales}".orders_amount`));
    await db.query(`CREATE TABLE "${sales}".tmp (id int)`);
    await db.query(lending([['r', sales, 'tmp']], `DROP TABLE "${sales}".tmp`));
    expect(await owned(writeRole)).toEqual([]);
  });

  it('cannot borrow what is outside its scope, whatever the comment says', async () => {
    // A public repo of alice: the key's role may name its tables (USAGE through PUBLIC), but holds
    // no CREATE there, so nothing of it is lent.
    await env.control.createRepo({ owner: alice, repo: 'open' }, { isPrivate: false });
    const a = await connectAs(alice);
    await a.query(`CREATE TABLE "${alice}/open".t (id int)`);
    const db = await connectAs(writeRole);
    expect(await sqlstate(db, lending([['r', `${alice}/open`, 't']], `ALTER TABLE "${alice}/open".t ADD COLUMN x int`))).toBe('42501');
    expect(await sqlstate(db, lending([['r', `${alice}/open`, 't']], `DROP TABLE "${alice}/open".t`))).toBe('42501');
    expect(await ownerOf(`"${alice}/open".t`)).toBe(alice);
    expect(await sqlstate(db, lending([['r', other, 'secret']], `ALTER TABLE "${other}".secret ADD COLUMN x int`))).toBe('42501');
    expect(await sqlstate(db, lending([['r', other, 'secret']], `DROP TABLE "${other}".secret`))).toBe('42501');
    expect(await ownerOf(`"${other}".secret`)).toBe(alice);
  });

  it('cannot grant, create functions or schemas, or plant another user\'s code in its repo', async () => {
    const db = await connectAs(writeRole);
    expect(await sqlstate(db, lending([['r', sales, 'orders']], `GRANT SELECT ON "${sales}".orders TO "${bob}"`))).toBe('42501');
    expect(await sqlstate(db, `CREATE FUNCTION "${sales}".f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`)).toBe('42501');
    expect(await sqlstate(db, `CREATE SCHEMA "${alice}/new"`)).toBe('42501');
    expect(await sqlstate(db, lending([['r', sales, 'orders']], `CREATE TRIGGER t BEFORE INSERT ON "${sales}".orders FOR EACH ROW EXECUTE FUNCTION "${bob}/pub".steal()`))).toBe('42501');
    expect(await sqlstate(db, `CREATE TABLE "${sales}".planted (v int DEFAULT "${bob}/pub".pick())`)).toBe('42501');
    expect(await sqlstate(db, `SELECT 1 FROM "${sales}".planted`)).toBe('42P01');
    const triggers = await env.cluster.admin.query(`SELECT count(*)::int AS n FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal`, [`"${sales}".orders`]);
    expect(triggers.rows[0]).toEqual({ n: 0 });
    const grants = await env.cluster.admin.query(`SELECT has_table_privilege($1, $2, 'SELECT') AS can`, [bob, `"${sales}".orders`]);
    expect(grants.rows[0]).toEqual({ can: false });
    expect(await owned(writeRole)).toEqual([]);
  });
});

describe('the grants of a key follow its user\'s', () => {
  it('a key for every repo reaches a repo made later; a key for a shared repo loses it when the user does', async () => {
    await env.control.createRepo({ owner: bob, repo: 'shared' });
    const b = await connectAs(bob);
    await b.query(`CREATE TABLE "${bob}/shared".t (v text); INSERT INTO "${bob}/shared".t VALUES ('shared')`);
    await env.control.setCollaborator({ owner: bob, repo: 'shared' }, carol, 'read');
    const every = await env.control.keys.create(carol, { access: 'read' });
    const listing = await env.control.keys.create(carol, { repos: [`${bob}/shared`], access: 'read' });
    const everyDb = await connectAs(keyRoleName(carol, every.id));
    const listingDb = await connectAs(keyRoleName(carol, listing.id));
    expect((await listingDb.query(`SELECT v FROM "${bob}/shared".t`)).rows).toEqual([{ v: 'shared' }]);
    expect((await everyDb.query(`SELECT v FROM "${bob}/shared".t`)).rows).toEqual([{ v: 'shared' }]);
    // Raised to write: a read key of a write collaborator still only reads.
    await env.control.setCollaborator({ owner: bob, repo: 'shared' }, carol, 'write');
    expect(await sqlstate(listingDb, `INSERT INTO "${bob}/shared".t VALUES ('x')`)).toBe('25006');
    // A repo carol makes later: the key for every repo reaches it, the listing one does not.
    await env.control.createRepo({ owner: carol, repo: 'later' });
    const c = await connectAs(carol);
    await c.query(`CREATE TABLE "${carol}/later".t (v text); INSERT INTO "${carol}/later".t VALUES ('later')`);
    expect((await everyDb.query(`SELECT v FROM "${carol}/later".t`)).rows).toEqual([{ v: 'later' }]);
    expect(await sqlstate(listingDb, `SELECT v FROM "${carol}/later".t`)).toBe('42501');
    // Unshared: both keys lose it with carol.
    await env.control.removeCollaborator({ owner: bob, repo: 'shared' }, carol);
    expect(await sqlstate(listingDb, `SELECT * FROM "${bob}/shared".t`)).toBe('42501');
    expect(await sqlstate(everyDb, `SELECT * FROM "${bob}/shared".t`)).toBe('42501');
  });
});

describe('revoking a scoped key', () => {
  it('drops its role and ends its backends', async () => {
    const key = await env.control.keys.create(alice, { repos: [sales], access: 'read' });
    const role = keyRoleName(alice, key.id);
    const db = await connectAs(role);
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await env.control.keys.revoke(key.id, alice);
    await expect(db.query('SELECT 1')).rejects.toBeDefined();
    const exists = await env.cluster.admin.query('SELECT count(*)::int AS n FROM pg_roles WHERE rolname = $1', [role]);
    expect(exists.rows[0]).toEqual({ n: 0 });
    await expect(connectAs(role)).rejects.toMatchObject({ code: '28P01' });
  });

  it('gives its user what its role made that Postgres lets any role make (a large object)', async () => {
    const key = await env.control.keys.create(alice, { repos: [sales], access: 'write' });
    const db = await connectAs(keyRoleName(alice, key.id));
    const made = await db.query<{ oid: number }>('SELECT lo_from_bytea(0, $1)::int AS oid', [Buffer.from('kept')]);
    await env.control.keys.revoke(key.id, alice);
    const owner = await env.cluster.admin.query('SELECT pg_get_userbyid(lomowner) AS owner FROM pg_largeobject_metadata WHERE oid = $1', [made.rows[0]!.oid]);
    expect(owner.rows).toEqual([{ owner: alice }]);
  });
});
