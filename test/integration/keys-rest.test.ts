/**
 * Scoped keys over REST: making and listing them, what a read key and a write key may do through
 * `/query/`, uploads, the repo routes and the console's routes, expiry and revocation (a running
 * statement is cancelled), and the audit log naming the key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTROL_SCHEMA } from '../../src/control/migrations.js';
import { startRest, type QueryBody, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let sales: string;
let other: string;
let readKey: string;
let readId: string;
let writeKey: string;

interface KeyJson {
  id: string;
  prefix: string;
  key: string;
  name: string;
  repos: string[] | null;
  access: string;
  expires_at: string | null;
  created_at: string;
}

async function makeKey(by: string, body: unknown): Promise<{ status: number; json: KeyJson & { error?: { code: string; message: string } } }> {
  const res = await srv.call(by, 'POST', '/keys/', body);
  return { status: res.status, json: (await res.json()) as KeyJson & { error?: { code: string; message: string } } };
}

async function query(key: string, sql: string): Promise<{ status: number; body: QueryBody }> {
  const r = await srv.query(key, sql);
  return { status: r.status, body: r.body };
}

async function refused(key: string, sql: string, says: string, status = 403): Promise<void> {
  const r = await query(key, sql);
  expect(r.status, `${sql}: ${JSON.stringify(r.body)}`).toBe(status);
  expect(r.body.error?.message).toContain(says);
}

async function upload(key: string, repo: string, table: string, csv: string, mode = 'create'): Promise<Response> {
  const form = new FormData();
  form.append('repo', repo);
  form.append('table_name', table);
  form.append('mode', mode);
  form.append('file', new Blob([csv], { type: 'text/csv' }), `${table}.csv`);
  return fetch(`${srv.url}/api/v1beta/import/`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
}

beforeAll(async () => {
  srv = await startRest();
  alice = await srv.user('alice');
  bob = await srv.user('bob');
  sales = `${alice.name}/sales`;
  other = `${alice.name}/other`;
  for (const name of ['sales', 'other']) expect((await srv.call(alice.key, 'POST', '/repos/', { name })).status).toBe(201);
  expect((await srv.call(bob.key, 'POST', '/repos/', { name: 'pub', is_private: false })).status).toBe(201);
  expect((await srv.call(bob.key, 'POST', '/repos/', { name: 'shared' })).status).toBe(201);
  expect((await srv.call(bob.key, 'PUT', `/repos/${bob.name}/shared/collaborators/${alice.name}`, { permission: 'read' })).status).toBe(200);
  for (const sql of [
    `CREATE TABLE "${sales}".orders (id serial PRIMARY KEY, amount int)`,
    `INSERT INTO "${sales}".orders (amount) VALUES (10), (20)`,
    `CREATE TABLE "${other}".secret (v text)`,
    `INSERT INTO "${other}".secret VALUES ('classified')`,
  ]) {
    expect((await query(alice.key, sql)).status).toBe(200);
  }
  const read = await makeKey(alice.key, { name: 'dashboard', repos: [sales], access: 'read' });
  expect(read.status).toBe(201);
  readKey = read.json.key;
  readId = read.json.id;
  const write = await makeKey(alice.key, { name: 'etl', repos: [sales], access: 'write' });
  expect(write.status).toBe(201);
  writeKey = write.json.key;
});

afterAll(async () => {
  await srv?.stop();
});

describe('making keys', () => {
  it('answers the key once with its scope, and lists every key with its scope and no secret', async () => {
    const made = await makeKey(alice.key, { name: 'report', repos: [sales], access: 'read', expires_at: '2099-01-01T00:00:00Z' });
    expect(made.status).toBe(201);
    expect(made.json).toMatchObject({ name: 'report', repos: [sales], access: 'read', expires_at: '2099-01-01T00:00:00.000Z', prefix: `rb_${made.json.id}` });
    expect(made.json.key.startsWith(`rb_${made.json.id}_`)).toBe(true);
    const list = (await (await srv.call(alice.key, 'GET', '/keys/')).json()) as { keys: Array<Record<string, unknown>> };
    const listed = list.keys.find((k) => k.id === made.json.id)!;
    expect(listed).toMatchObject({ name: 'report', repos: [sales], access: 'read', expires_at: '2099-01-01T00:00:00.000Z', expired: false, last_used_at: null });
    expect(JSON.stringify(list)).not.toContain(made.json.key.slice(16));
    // An empty body (or none) is a full key, as before.
    const full = await makeKey(alice.key, undefined);
    expect(full.json).toMatchObject({ name: '', repos: null, access: 'full', expires_at: null });
  });

  it('refuses a repo the user does not own or collaborate on as missing (404), write on a repo it reads (403), bad input (400)', async () => {
    for (const repo of [`${bob.name}/pub`, `${bob.name}/nothing`, `${alice.name}/missing`]) {
      const r = await makeKey(alice.key, { repos: [repo], access: 'read' });
      expect(r.status, repo).toBe(404);
      expect(r.json.error?.message).toBe(`repo "${repo}" does not exist`);
    }
    expect((await makeKey(alice.key, { repos: [`${bob.name}/shared`], access: 'read' })).status).toBe(201);
    const write = await makeKey(alice.key, { repos: [`${bob.name}/shared`], access: 'write' });
    expect(write.status).toBe(403);
    expect(write.json.error?.code).toBe('42501');
    for (const body of [
      { repos: [sales], access: 'full' },
      { repos: [], access: 'read' },
      { repos: ['not a repo'], access: 'read' },
      { access: 'admin' },
      { expires_at: '2001-01-01T00:00:00Z' },
      { expires_at: 'tomorrow' },
      { name: 'x'.repeat(101) },
      { scope: 'everything' },
    ]) {
      const r = await makeKey(alice.key, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error?.message, JSON.stringify(body)).toBeTruthy();
    }
    // Nothing was made by the refused requests.
    const keys = ((await (await srv.call(alice.key, 'GET', '/keys/')).json()) as { keys: Array<{ repos: string[] | null }> }).keys;
    expect(keys.filter((k) => JSON.stringify(k.repos).includes('missing') || JSON.stringify(k.repos).includes('pub'))).toEqual([]);
  });
});

describe('a read key', () => {
  it('lists and reads only the repos of its scope', async () => {
    const repos = (await (await srv.call(readKey, 'GET', '/repos/?include=shared')).json()) as { repos: Array<{ name: string; permission: string }> };
    expect(repos.repos).toEqual([expect.objectContaining({ name: sales, permission: 'read' })]);
    expect((await srv.call(readKey, 'GET', `/repos/${sales}/`)).status).toBe(200);
    expect((await srv.call(readKey, 'GET', `/repos/${other}/`)).status).toBe(404);
    const r = await query(readKey, `SELECT sum(amount)::int AS s FROM "${sales}".orders`);
    expect(r.body.data).toEqual([[30]]);
    expect((await query(readKey, `SELECT * FROM "${bob.name}/pub".nothing`)).body.error?.code).toBe('42P01'); // public repos: readable (no such table)
  });

  it('is refused every write and everything outside its scope, naming the key', async () => {
    await refused(readKey, `INSERT INTO "${sales}".orders (amount) VALUES (1)`, 'API key "dashboard"');
    await refused(readKey, `UPDATE "${sales}".orders SET amount = 0`, 'is read-only');
    await refused(readKey, `DELETE FROM "${sales}".orders`, 'is read-only');
    await refused(readKey, `CREATE TABLE "${sales}".mine (id int)`, 'is read-only');
    await refused(readKey, `SELECT nextval('"${sales}".orders_id_seq')`, 'is read-only');
    await refused(readKey, `SELECT * FROM "${sales}".orders FOR UPDATE`, 'is read-only');
    await refused(readKey, 'SELECT lo_create(0)', 'cannot use large objects');
    await refused(readKey, 'DO $$ BEGIN NULL; END $$', 'is read-only');
    await refused(readKey, 'SET default_transaction_read_only = off', 'read-only');
    await refused(readKey, 'BEGIN READ WRITE', 'read-only');
    await refused(readKey, `SELECT * FROM "${other}".secret`, `repo "${other}" is outside the scope of API key "dashboard" (rb_${readId})`);
    await refused(readKey, `CREATE SCHEMA "${alice.name}/new"`, 'needs a full API key');
    const r = await query(readKey, `SELECT * FROM "${other}".secret`);
    expect(JSON.stringify(r.body)).not.toContain('classified');
    expect(r.body.error?.hint).toContain('POST /api/v1beta/keys/');
  });

  it("gives its Postgres session back to its own role's pool, also after a streamed answer", async () => {
    // CSV answers stream, and a streamed answer gives the session back when it ends.
    for (let i = 0; i < 3; i++) {
      const res = await srv.call(readKey, 'POST', '/query/', { query_string: `SELECT id, amount FROM "${sales}".orders ORDER BY id` }, { accept: 'text/csv' });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('10');
    }
    // The user's full key then runs as the user, with the user's rights, on every session it takes.
    const alices = await Promise.all(Array.from({ length: 4 }, () => query(alice.key, 'SELECT current_user AS who')));
    for (const r of alices) expect(r.body.data).toEqual([[alice.name]]);
    const write = await query(alice.key, `INSERT INTO "${other}".secret VALUES ('still mine')`);
    expect(write.status, JSON.stringify(write.body)).toBe(200);
  });

  it('cannot manage the account: keys, repos, sharing, usage, the console', async () => {
    const calls: Array<[string, string, unknown?]> = [
      ['GET', '/keys/'],
      ['POST', '/keys/', {}],
      ['DELETE', `/keys/${readId}`],
      ['POST', '/repos/', { name: 'sneaky' }],
      ['PATCH', `/repos/${sales}/`, { is_private: false }],
      ['DELETE', `/repos/${sales}/`],
      ['GET', `/repos/${sales}/collaborators/`],
      ['PUT', `/repos/${sales}/collaborators/${bob.name}`, { permission: 'read' }],
      ['GET', '/usage/'],
      ['GET', '/auth/session'],
    ];
    for (const [method, path, body] of calls) {
      const res = await srv.call(readKey, method, path, body);
      const json = (await res.json()) as { error?: { code: string; message: string } };
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(json.error?.message, `${method} ${path}`).toContain('needs a full API key');
    }
    // Nothing changed: the key still works, the repo is still private, no repo was made.
    expect((await query(readKey, 'SELECT 1')).status).toBe(200);
    const repos = (await (await srv.call(alice.key, 'GET', '/repos/')).json()) as { repos: Array<{ name: string; is_private: boolean }> };
    expect(repos.repos.map((r) => [r.name, r.is_private])).toEqual([
      [other, true],
      [sales, true],
    ]);
  });

  it('hears the live schema events of its repo only, and its stream ends when it is revoked', async () => {
    const made = await makeKey(alice.key, { name: 'watcher', repos: [sales], access: 'read' });
    const res = await fetch(`${srv.url}/api/v1beta/events`, { headers: { authorization: `Bearer ${made.json.key}` } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    const reading = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        text += new TextDecoder().decode(value);
      }
    })().then(
      () => 'ended',
      () => 'cut', // handled at once: the cut may come before the DELETE below answers
    );
    await query(alice.key, `CREATE TABLE "${other}".hidden_change (id int)`);
    await query(alice.key, `CREATE TABLE "${sales}".seen_change (id int)`);
    await expect.poll(() => text, { timeout: 5_000 }).toContain('seen_change');
    expect(text).not.toContain('hidden_change');
    expect(text).not.toContain(other);
    expect((await srv.call(alice.key, 'DELETE', `/keys/${made.json.id}`)).status).toBe(204);
    // The server ends the stream (its connection is cut).
    expect(['ended', 'cut']).toContain(await reading);
  });

  it('cannot upload', async () => {
    const res = await upload(readKey, sales, 'uploaded', 'a,b\n1,2\n');
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('is read-only');
  });
});

describe('a write key', () => {
  it('changes rows and structure of its repos, leaving objects owned by the user', async () => {
    expect((await query(writeKey, `INSERT INTO "${sales}".orders (amount) VALUES (5)`)).status).toBe(200);
    expect((await query(writeKey, `CREATE TABLE "${sales}".daily (day date, total int)`)).status).toBe(200);
    expect((await query(writeKey, `ALTER TABLE "${sales}".daily ADD COLUMN note text`)).status).toBe(200);
    expect((await query(writeKey, `CREATE INDEX ON "${sales}".orders (amount)`)).status).toBe(200);
    const owners = await srv.control.admin.query<{ relname: string; owner: string }>(
      `SELECT relname, pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'i') ORDER BY relname`,
      [`"${sales}"`],
    );
    expect(new Set(owners.rows.map((r) => r.owner))).toEqual(new Set([alice.name]));
    expect((await query(writeKey, `DROP TABLE "${sales}".daily`)).status).toBe(200);
    // The user's full key still does what it did.
    expect((await query(alice.key, `ALTER TABLE "${sales}".orders ADD COLUMN by_alice int`)).status).toBe(200);
  });

  it('makes no code, no repo, shares nothing, and stays in its scope', async () => {
    await refused(writeKey, `CREATE FUNCTION "${sales}".f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`, 'needs a full API key');
    await refused(writeKey, `GRANT SELECT ON ALL TABLES IN SCHEMA "${sales}" TO "${bob.name}"`, 'needs a full API key');
    await refused(writeKey, `DROP SCHEMA "${sales}" CASCADE`, 'needs a full API key');
    await refused(writeKey, `INSERT INTO "${other}".secret VALUES ('x')`, 'outside the scope');
    await refused(writeKey, `VACUUM "${sales}".orders`, 'needs a full API key');
  });

  it('uploads a file into a table its user owns, and replaces it', async () => {
    const first = await upload(writeKey, sales, 'uploaded', 'a,b\n1,2\n3,4\n');
    expect(first.status, await first.clone().text()).toBe(200);
    const again = await upload(writeKey, sales, 'uploaded', 'a,b\n5,6\n', 'replace');
    expect(again.status, await again.clone().text()).toBe(200);
    const rows = await srv.control.admin.query(`SELECT a::int AS a FROM "${sales}".uploaded`);
    expect(rows.rows).toEqual([{ a: 5 }]);
    const owner = await srv.control.admin.query(`SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = $1::regclass`, [`"${sales}".uploaded`]);
    expect(owner.rows[0]).toEqual({ owner: alice.name });
    expect((await upload(writeKey, other, 'uploaded', 'a\n1\n')).status).toBe(403);
  });
});

describe('expiry and revocation', () => {
  it('an expired key is 401 28000 saying when it expired; it is listed as expired', async () => {
    const soon = new Date(Date.now() + 1500).toISOString();
    const made = await makeKey(alice.key, { name: 'brief', repos: [sales], access: 'read', expires_at: soon });
    expect((await query(made.json.key, 'SELECT 1')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1800));
    const r = await query(made.json.key, 'SELECT 1');
    expect(r.status).toBe(401);
    expect(r.body.error?.code).toBe('28000');
    expect(r.body.error?.message).toBe(`API key "brief" (rb_${made.json.id}) expired at ${new Date(soon).toISOString()}`);
    const keys = ((await (await srv.call(alice.key, 'GET', '/keys/')).json()) as { keys: Array<{ id: string; expired: boolean }> }).keys;
    expect(keys.find((k) => k.id === made.json.id)?.expired).toBe(true);
  });

  it('revocation cancels a running statement of the key, with 401 saying why', async () => {
    const made = await makeKey(alice.key, { name: 'long', repos: [sales], access: 'read' });
    const running = query(made.json.key, 'SELECT pg_sleep(30)');
    await new Promise((r) => setTimeout(r, 500));
    const started = Date.now();
    expect((await srv.call(alice.key, 'DELETE', `/keys/${made.json.id}`)).status).toBe(204);
    const r = await running;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.status).toBe(401);
    expect(r.body.error?.message).toBe(`canceling statement: API key "long" (rb_${made.json.id}) was revoked`);
    expect((await query(made.json.key, 'SELECT 1')).status).toBe(401);
  });
});

describe('the audit log', () => {
  it('names the key of every refusal and DDL statement', async () => {
    await srv.control.audit.flush();
    const rows = await srv.control.admin.query<{ action: string; key_id: string; key_name: string; sql_text: string }>(
      `SELECT action, key_id, key_name, sql_text FROM ${CONTROL_SCHEMA}.audit_log WHERE user_name = $1 AND action IN ('statement_denied', 'ddl') AND key_id IS NOT NULL ORDER BY id`,
      [alice.name],
    );
    expect(rows.rows.find((r) => r.action === 'statement_denied' && r.sql_text.startsWith('INSERT INTO'))).toMatchObject({ key_id: readId, key_name: 'dashboard' });
    expect(rows.rows.find((r) => r.action === 'ddl' && r.key_name === 'etl')?.sql_text).toBe(`CREATE TABLE "${sales}".daily (day date, total int)`);
  });
});
