/**
 * Isolation through REST: bob's key reaches nothing of alice's private repo by any path, reads
 * but does not write her public repo; a write collaborator inserts but does not alter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let carol: { name: string; key: string };
let secret: string;
let pub: string;
let shared: string;

const SECRET_VALUE = 'classified-4711';

beforeAll(async () => {
  srv = await startRest();
  alice = await srv.user('alice');
  bob = await srv.user('bob');
  carol = await srv.user('carol');
  secret = `${alice.name}/secret`;
  pub = `${alice.name}/pub`;
  shared = `${alice.name}/shared`;
  for (const [repo, isPrivate] of [
    ['secret', true],
    ['pub', false],
    ['shared', true],
  ] as const) {
    const r = await srv.call(alice.key, 'POST', '/repos/', { name: repo, is_private: isPrivate });
    expect(r.status).toBe(201);
  }
  for (const repo of [secret, pub, shared]) {
    for (const sql of [`CREATE TABLE "${repo}".t (id serial, v text)`, `INSERT INTO "${repo}".t (v) VALUES ('${SECRET_VALUE}')`]) {
      expect((await srv.query(alice.key, sql)).status).toBe(200);
    }
  }
  await srv.call(bob.key, 'POST', '/repos/', { name: 'own' });
  const put = await srv.call(alice.key, 'PUT', `/repos/${shared}/collaborators/${carol.name}`, { permission: 'write' });
  expect(put.status).toBe(200);
});

afterAll(async () => {
  await srv?.stop();
});

/** Asserts bob's statement fails with one of `codes` and that nothing of the secret shows. */
async function refused(sql: string, codes: string[] = ['42501']) {
  const r = await srv.query(bob.key, sql);
  expect(r.text, sql).not.toContain(SECRET_VALUE);
  expect(r.body.error?.code, `${sql}: ${r.text}`).toBeOneOf(codes);
  expect(r.status).toBe(r.body.error?.code === '42P01' ? 404 : 403);
  return r;
}

describe("bob and alice's private repo", () => {
  it('cannot read it: directly, through a CTE, a sub-select, a join or COPY', async () => {
    const t = `"${secret}".t`;
    await refused(`SELECT * FROM ${t}`);
    await refused(`WITH x AS (SELECT * FROM ${t}) SELECT * FROM x`);
    await refused(`SELECT (SELECT v FROM ${t} LIMIT 1)`);
    await refused(`SELECT 1 WHERE EXISTS (SELECT 1 FROM ${t} WHERE v LIKE 'c%')`);
    await refused(`SELECT * FROM "${bob.name}/own".nothing JOIN ${t} ON true`, ['42501', '42P01']);
    await refused(`COPY ${t} TO STDOUT`);
    await refused(`COPY (SELECT * FROM ${t}) TO STDOUT`);
    await refused(`EXPLAIN ANALYZE SELECT * FROM ${t}`);
    await refused(`TABLE ${t}`);
  });

  it('cannot read it through a view or a function of its own', async () => {
    const view = await srv.query(bob.key, `CREATE VIEW "${bob.name}/own".v AS SELECT * FROM "${secret}".t`);
    if (view.status === 200) {
      // If a view could be created, Postgres' own check stops the read.
      await refused(`SELECT * FROM "${bob.name}/own".v`);
    } else {
      expect(view.body.error?.code).toBe('42501');
    }
    const fn = await srv.query(bob.key, `CREATE FUNCTION "${bob.name}/own".f() RETURNS SETOF text LANGUAGE sql AS $$ SELECT v FROM "${secret}".t $$`);
    if (fn.status === 200) {
      await refused(`SELECT * FROM "${bob.name}/own".f()`);
    } else {
      expect(fn.body.error?.code).toBe('42501');
    }
    const plpgsql = await srv.query(
      bob.key,
      `CREATE FUNCTION "${bob.name}/own".g() RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN (SELECT v FROM "${secret}".t LIMIT 1); END $$`,
    );
    if (plpgsql.status === 200) await refused(`SELECT "${bob.name}/own".g()`);
    else expect(plpgsql.body.error?.code).toBe('42501');
  });

  it('cannot write, alter or drop it', async () => {
    const t = `"${secret}".t`;
    await refused(`INSERT INTO ${t} (v) VALUES ('x')`);
    await refused(`UPDATE ${t} SET v = 'x'`);
    await refused(`DELETE FROM ${t}`);
    await refused(`TRUNCATE ${t}`);
    await refused(`ALTER TABLE ${t} ADD COLUMN x int`);
    await refused(`DROP TABLE ${t}`);
    await refused(`CREATE TABLE "${secret}".mine (id int)`);
    await refused(`DROP SCHEMA "${secret}" CASCADE`);
    // Nothing changed.
    const check = await srv.query(alice.key, `SELECT v FROM "${secret}".t`);
    expect(check.body.data).toEqual([[SECRET_VALUE]]);
  });

  it('cannot list it or learn that it exists', async () => {
    const mine = await srv.call(bob.key, 'GET', '/repos/');
    expect(((await mine.json()) as { repos: { name: string }[] }).repos.map((r) => r.name)).toEqual([`${bob.name}/own`]);
    const missing = `${alice.name}/no-such-repo`;
    for (const [method, suffix, body] of [
      ['GET', '/', undefined],
      ['PATCH', '/', { description: 'x' }],
      ['DELETE', '/', undefined],
      ['GET', '/collaborators/', undefined],
      ['PUT', `/collaborators/${bob.name}`, { permission: 'read' }],
      ['DELETE', `/collaborators/${carol.name}`, undefined],
    ] as const) {
      const real = await srv.call(bob.key, method, `/repos/${secret}${suffix}`, body);
      const fake = await srv.call(bob.key, method, `/repos/${missing}${suffix}`, body);
      expect(real.status, `${method} ${suffix}`).toBe(404);
      expect(fake.status).toBe(404);
      const [a, b] = [(await real.json()) as { error: { code: string; message: string } }, (await fake.json()) as { error: { code: string; message: string } }];
      expect(a.error.code).toBe('3F000');
      expect(a.error.message.replace(secret, '?')).toBe(b.error.message.replace(missing, '?'));
    }
    const info = await srv.query(bob.key, `SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema = '${secret}'`);
    expect(info.status).toBe(200);
    expect(info.body.data).toEqual([]);
    const cols = await srv.query(bob.key, `SELECT column_name FROM information_schema.columns WHERE table_schema = '${secret}'`);
    expect(cols.body.data).toEqual([]);
    // Still there for its owner.
    expect((await srv.call(alice.key, 'GET', `/repos/${secret}/`)).status).toBe(200);
  });
});

describe("bob and alice's public repo", () => {
  it('reads it, over SQL and GET', async () => {
    const r = await srv.query(bob.key, `SELECT v FROM "${pub}".t`);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([[SECRET_VALUE]]);
    const detail = await srv.call(bob.key, 'GET', `/repos/${pub}/`);
    expect(detail.status).toBe(200);
    expect(((await detail.json()) as { tables: { name: string }[] }).tables.map((t) => t.name)).toEqual(['t']);
  });

  it('does not write or change it: 403', async () => {
    await refused(`INSERT INTO "${pub}".t (v) VALUES ('x')`);
    await refused(`UPDATE "${pub}".t SET v = 'x'`);
    await refused(`ALTER TABLE "${pub}".t ADD COLUMN x int`);
    for (const [method, suffix, body] of [
      ['PATCH', '/', { is_private: true }],
      ['DELETE', '/', undefined],
      ['PUT', `/collaborators/${bob.name}`, { permission: 'write' }],
    ] as const) {
      const r = await srv.call(bob.key, method, `/repos/${pub}${suffix}`, body);
      expect(r.status, `${method} ${suffix}`).toBe(403);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('42501');
    }
  });
});

describe('a write collaborator', () => {
  it('inserts, updates and reads, but does not alter or change the repo', async () => {
    const ins = await srv.query(carol.key, `INSERT INTO "${shared}".t (v) VALUES ('from carol')`);
    expect(ins.body).toMatchObject({ command: 'INSERT', row_count: 1 });
    expect((await srv.query(carol.key, `UPDATE "${shared}".t SET v = 'changed' WHERE v = 'from carol'`)).body).toMatchObject({ command: 'UPDATE', row_count: 1 });
    const sel = await srv.query(carol.key, `SELECT v FROM "${shared}".t ORDER BY id`);
    expect(sel.body.data).toEqual([[SECRET_VALUE], ['changed']]);
    const alter = await srv.query(carol.key, `ALTER TABLE "${shared}".t ADD COLUMN x int`);
    expect(alter.status).toBe(403);
    expect(alter.body.error?.code).toBe('42501');
    expect((await srv.query(carol.key, `DROP TABLE "${shared}".t`)).status).toBe(403);
    expect((await srv.call(carol.key, 'GET', `/repos/${shared}/`)).status).toBe(200);
    expect((await srv.call(carol.key, 'PATCH', `/repos/${shared}/`, { description: 'mine now' })).status).toBe(403);
    // bob, no collaborator, still cannot see the shared repo.
    expect((await srv.call(bob.key, 'GET', `/repos/${shared}/`)).status).toBe(404);
  });

  it('loses access when removed', async () => {
    const del = await srv.call(alice.key, 'DELETE', `/repos/${shared}/collaborators/${carol.name}`);
    expect(del.status).toBe(204);
    const r = await srv.query(carol.key, `SELECT v FROM "${shared}".t`);
    expect(r.status).toBe(403);
    expect((await srv.call(carol.key, 'GET', `/repos/${shared}/`)).status).toBe(404);
  });
});
