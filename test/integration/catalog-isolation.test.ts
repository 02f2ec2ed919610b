/**
 * Private catalogs: every catalog route, through the wire front end (simple and extended
 * protocol) and REST, as a user with collaborations and one without. Another user's private
 * repo ("layoffs-2027") and its objects never appear; a public repo appears only when it is on
 * the search path; roles are the user and those they share repos with. psql's \d family against
 * expected lists.
 */
import { execFile } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JDBC_GET_TABLES } from '../../bench/scenarios/catalog.js';
import { startTestService, type TestService } from '../helpers/service.js';

type Who = { name: string; key: string };
let svc: TestService;
let alice: Who;
let bob: Who;
let carol: Who;
let dave: Who;
let erin: Who;
const clients: pg.Client[] = [];

async function connect(who: Who, database?: string): Promise<pg.Client> {
  const client = new pg.Client(svc.pgOptions(who.name, who.key, database));
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

/** Every route by which a catalog names repos, objects or roles. */
const probes = [
  'SELECT nspname FROM pg_namespace',
  'SELECT relname, relnamespace::regnamespace::text FROM pg_class',
  "SELECT n.nspname || '.' || c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace",
  'SELECT attrelid::regclass::text, attname FROM pg_attribute WHERE attnum > 0',
  'SELECT proname, pronamespace::regnamespace::text, prosrc FROM pg_proc',
  'SELECT typname, typnamespace::regnamespace::text FROM pg_type',
  'SELECT conname, connamespace::regnamespace::text FROM pg_constraint',
  'SELECT indexrelid::regclass::text, indrelid::regclass::text FROM pg_index',
  'SELECT objoid::regclass::text, description FROM pg_description',
  'SELECT pg_describe_object(classid, objid, objsubid), pg_describe_object(refclassid, refobjid, 0) FROM pg_depend',
  'SELECT schemaname, relname FROM pg_stat_all_tables',
  'SELECT schemaname, relname, indexrelname FROM pg_stat_user_indexes',
  'SELECT schemaname, relname FROM pg_statio_all_tables',
  'SELECT schemaname, tablename, tableowner FROM pg_tables',
  'SELECT schemaname, viewname, definition FROM pg_views',
  'SELECT schemaname, indexname, indexdef FROM pg_indexes',
  'SELECT schemaname, sequencename FROM pg_sequences',
  'SELECT * FROM pg_stats',
  'SELECT * FROM pg_stats_ext',
  'SELECT rolname FROM pg_roles',
  'SELECT usename FROM pg_user',
  'SELECT roleid::regrole::text, member::regrole::text FROM pg_auth_members',
  'SELECT usename, query FROM pg_stat_activity',
  'SELECT * FROM information_schema.schemata',
  'SELECT table_schema, table_name FROM information_schema.tables',
  'SELECT table_schema, table_name, column_name FROM information_schema.columns',
  'SELECT routine_schema, routine_name FROM information_schema.routines',
  'SELECT table_schema, table_name FROM information_schema.views',
  'SELECT grantor, grantee, table_schema, table_name FROM information_schema.table_privileges',
  'SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class',
  JDBC_GET_TABLES,
];

/** Everything the probes answer, as one text. */
async function wireAnswers(client: pg.Client, extended: boolean): Promise<string> {
  const out: unknown[] = [];
  for (const [i, text] of probes.entries()) {
    const r = extended ? await client.query({ name: `probe${i}`, text }) : await client.query(text);
    out.push(r.rows);
  }
  return JSON.stringify(out);
}

async function restAnswers(who: Who): Promise<string> {
  const out: unknown[] = [];
  for (const sql of probes) {
    const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query_string: sql }),
    });
    const text = await res.text();
    expect(res.status, `${sql}: ${text}`).toBe(200);
    out.push(JSON.parse(text));
  }
  return JSON.stringify(out);
}

/**
 * Roles everybody sees: the bootstrap superuser and the database's owner, who own the system's
 * schemas and catalogs (pg_dump names every owner it meets).
 */
let systemRoles: string[] = [];

beforeAll(async () => {
  svc = await startTestService();
  const admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
  systemRoles = (await admin.query<{ rolname: string }>("SELECT DISTINCT rolname FROM pg_roles WHERE oid = 10 OR oid = (SELECT datdba FROM pg_database WHERE datname = current_database())")).rows.map((r) => r.rolname);
  await admin.end();
  [alice, bob, carol, dave, erin] = await Promise.all([svc.user('alice'), svc.user('bob'), svc.user('carol'), svc.user('dave'), svc.user('erin')]);
  await svc.control.createRepo({ owner: alice.name, repo: 'sales' });
  await svc.control.createRepo({ owner: alice.name, repo: 'notes' });
  await svc.control.createRepo({ owner: bob.name, repo: 'shared' });
  await svc.control.createRepo({ owner: carol.name, repo: 'layoffs-2027' });
  await svc.control.createRepo({ owner: dave.name, repo: 'pub' }, { isPrivate: false });
  await svc.control.createRepo({ owner: erin.name, repo: 'solo' });
  const a = await connect(alice, `${alice.name}/sales`);
  await a.query('CREATE TABLE orders (id serial PRIMARY KEY, customer text NOT NULL)');
  await a.query('CREATE FUNCTION total() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM orders $$');
  await a.query(`CREATE TABLE "${alice.name}/notes".note (body text)`);
  const b = await connect(bob, `${bob.name}/shared`);
  await b.query('CREATE TABLE common (id int)');
  await svc.control.setCollaborator({ owner: bob.name, repo: 'shared' }, alice.name, 'read');
  const c = await connect(carol, `${carol.name}/layoffs-2027`);
  await c.query('CREATE TABLE layoffs_list (id serial PRIMARY KEY, who_layoffs text UNIQUE)');
  await c.query('CREATE INDEX layoffs_idx ON layoffs_list (who_layoffs)');
  await c.query('CREATE VIEW layoffs_view AS SELECT who_layoffs FROM layoffs_list');
  await c.query("CREATE TYPE layoffs_mood AS ENUM ('sad')");
  await c.query('CREATE FUNCTION layoffs_fn() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$');
  await c.query("COMMENT ON TABLE layoffs_list IS 'layoffs in secret'");
  await c.query('INSERT INTO layoffs_list (who_layoffs) VALUES (\'x\'); ANALYZE layoffs_list');
  const d = await connect(dave, `${dave.name}/pub`);
  await d.query('CREATE TABLE pubtable (id int)');
  await connect(erin, `${erin.name}/solo`).then((e) => e.query('CREATE TABLE mine (id int)'));
  // The planner's statistics of the catalogs, as autovacuum makes them: their value lists hold
  // every user's names and function source.
  const analyse = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await analyse.connect();
  await analyse.query('ANALYZE pg_catalog.pg_class, pg_catalog.pg_proc, pg_catalog.pg_type, pg_catalog.pg_attribute');
  await analyse.end();
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc.stop();
});

function noLeak(text: string, others: Who[]): void {
  expect(text).not.toContain('layoffs');
  for (const o of others) expect(text, o.name).not.toContain(o.name);
}

describe('a user with collaborations (alice: own repos, bob\'s shared with her)', () => {
  it('sees her world and nothing else, by simple and extended protocol', async () => {
    const client = await connect(alice, `${alice.name}/sales`);
    for (const extended of [false, true]) {
      const text = await wireAnswers(client, extended);
      noLeak(text, [carol, dave, erin]);
      expect(text).toContain(`${alice.name}/sales`);
      expect(text).toContain(`${alice.name}/notes`);
      expect(text).toContain(`${bob.name}/shared`);
      expect(text).toContain('orders');
      expect(text).toContain('common');
      expect(text).toContain('pg_catalog');
    }
  });

  it("sees no planner statistics of the system catalogs (their value lists name others' objects)", async () => {
    const admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
    await admin.connect();
    const all = await admin.query("SELECT 1 FROM pg_stats WHERE schemaname = 'pg_catalog' AND tablename = 'pg_class'");
    await admin.end();
    expect(all.rowCount).toBeGreaterThan(0);
    const client = await connect(alice, `${alice.name}/sales`);
    expect((await client.query("SELECT 1 FROM pg_stats WHERE schemaname = 'pg_catalog'")).rowCount).toBe(0);
    expect((await client.query("SELECT 1 FROM pg_catalog.pg_stats WHERE tablename = 'pg_proc'")).rowCount).toBe(0);
  });

  it('sees the same through REST', async () => {
    const text = await restAnswers(alice);
    noLeak(text, [carol, dave, erin]);
    expect(text).toContain(`${alice.name}/sales`);
    expect(text).toContain(`${bob.name}/shared`);
  });

  it('sees a public repo only while it is on her search path', async () => {
    const client = await connect(alice, `${alice.name}/sales`);
    const listed = async () => (await client.query('SELECT nspname FROM pg_namespace')).rows.map((r: { nspname: string }) => r.nspname);
    expect(await listed()).not.toContain(`${dave.name}/pub`);
    await client.query(`SET search_path = "${alice.name}/sales", "${dave.name}/pub"`);
    expect(await listed()).toContain(`${dave.name}/pub`);
    const tables = await client.query('SELECT tablename FROM pg_tables WHERE schemaname = $1', [`${dave.name}/pub`]);
    expect(tables.rows).toEqual([{ tablename: 'pubtable' }]);
    // Its owner is no one she shares with: not among the roles.
    expect(JSON.stringify((await client.query('SELECT rolname FROM pg_roles')).rows)).not.toContain(dave.name);
    await client.query('RESET search_path');
    expect(await listed()).not.toContain(`${dave.name}/pub`);
  });

  it('sees the roles she shares repos with, both ways', async () => {
    const asBob = await connect(bob, `${bob.name}/shared`);
    const roles = (await asBob.query("SELECT rolname FROM pg_roles WHERE rolname !~ '^pg_' ORDER BY 1")).rows.map((r: { rolname: string }) => r.rolname);
    expect(roles).toEqual([alice.name, bob.name, ...systemRoles].sort());
  });

  it('keeps casts, oid joins and reg types working for what she may see', async () => {
    const client = await connect(alice, `${alice.name}/sales`);
    const r = await client.query(`SELECT c.relname, c.oid = 'orders'::regclass AS same, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
      WHERE c.oid = 'orders'::regclass AND a.attname = 'customer'`);
    expect(r.rows).toEqual([{ relname: 'orders', same: true, type: 'text' }]);
    const ns = await client.query(`SELECT count(*)::int AS n FROM pg_namespace WHERE oid = $1::regnamespace`, [`${alice.name}/notes`]);
    expect(ns.rows[0].n).toBe(1);
  });
});

describe('a user without collaborations (erin)', () => {
  it('sees only her own repo, by both front ends (extended protocol and REST)', async () => {
    const client = await connect(erin, `${erin.name}/solo`);
    for (const text of [await wireAnswers(client, true), await restAnswers(erin)]) {
      noLeak(text, [alice, bob, carol, dave]);
      expect(text).toContain(`${erin.name}/solo`);
    }
  });
});

describe('psql', () => {
  const psql = (who: Who, cmd: string): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile('psql', [svc.pgUrl(who.name, who.key, `${who.name}/sales`), '-X', '-A', '-t', '-c', cmd], { env: { ...process.env, PGCONNECT_TIMEOUT: '10' }, timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? 1 : 0, stdout, stderr });
      });
    });
  const lines = (s: string) => s.split('\n').filter((l) => l !== '');

  it('\\dn, \\dt, \\d, \\df, \\du list exactly her world', async () => {
    const dn = await psql(alice, '\\dn');
    expect(dn.stderr).toBe('');
    expect(lines(dn.stdout)).toEqual([
      `${alice.name}/notes|${alice.name}`,
      `${alice.name}/sales|${alice.name}`,
      `${bob.name}/shared|${bob.name}`,
      'public|pg_database_owner',
    ]);
    expect(lines((await psql(alice, '\\dt')).stdout)).toEqual([`${alice.name}/sales|orders|table|${alice.name}`]);
    expect(lines((await psql(alice, '\\dt *.*')).stdout).filter((l) => l.includes('/'))).toEqual([
      `${alice.name}/notes|note|table|${alice.name}`,
      `${alice.name}/sales|orders|table|${alice.name}`,
      `${bob.name}/shared|common|table|${bob.name}`,
    ]);
    const d = await psql(alice, '\\d orders');
    expect(d.stderr).toBe('');
    expect(lines(d.stdout).slice(0, 2).map((l) => l.split('|')[0])).toEqual(['id', 'customer']);
    expect(lines((await psql(alice, '\\di')).stdout).map((l) => l.split('|').slice(0, 2).join('|'))).toEqual([`${alice.name}/sales|orders_pkey`]);
    const df = await psql(alice, '\\df');
    expect(lines(df.stdout).map((l) => l.split('|').slice(0, 2).join('|'))).toEqual([`${alice.name}/sales|total`]);
    const du = await psql(alice, '\\du');
    expect(lines(du.stdout).map((l) => l.split('|')[0])).toEqual([alice.name, bob.name, ...systemRoles].sort());
    const layoffs = await psql(alice, `\\d "${carol.name}/layoffs-2027".*`);
    expect(layoffs.stdout + layoffs.stderr).not.toContain('layoffs_list');
  });

  it('\\l answers as the upstream does, and names no user\'s repo', async () => {
    const r = await psql(alice, '\\l');
    noLeak(r.stdout + r.stderr, [carol, dave, erin]);
  });
});
