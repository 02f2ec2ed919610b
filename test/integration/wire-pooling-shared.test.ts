/**
 * Pooling by transaction with every client of a user on one backend (pgSessionsPerUser 1): what
 * one client leaves on the backend must never reach, break or disconnect the next one, and each
 * must see what a backend of its own would show it. One test per way it once went wrong.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

type Who = { name: string; key: string };
let svc: TestService;
let alice: Who;
let repo: string;
/** Another user, with a public repo: readable by alice, not writable. */
let bob: Who;
const clients: pg.Client[] = [];

async function connect(): Promise<pg.Client> {
  const client = new pg.Client(svc.pgOptions(alice.name, alice.key, repo));
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

async function value<T = unknown>(client: pg.Client, sql: string): Promise<T> {
  const { rows } = await client.query({ text: sql, rowMode: 'array' });
  return (rows[0] as unknown[])[0] as T;
}

async function failure(client: pg.Client, sql: string): Promise<{ code: string; message: string }> {
  try {
    await client.query(sql);
  } catch (err: unknown) {
    const e = err as { code: string; message: string };
    return { code: e.code, message: e.message };
  }
  throw new Error(`${sql} succeeded`);
}

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 1, pgPoolTimeoutMs: 2000 });
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'shared' });
  repo = `${alice.name}/shared`;
  bob = await svc.user('bob');
  await svc.control.createRepo({ owner: bob.name, repo: 'open' }, { isPrivate: false });
  const setup = await connect();
  await setup.query('CREATE FUNCTION f_one() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$');
  await setup.query('CREATE TABLE items (id serial PRIMARY KEY, v text)');
  await setup.query('CREATE SEQUENCE s');
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc?.stop();
});

describe('one client after another on the same backend', () => {
  it("SET TRANSACTION ISOLATION LEVEL with a user's function inside: the next client is served, and neither keeps the isolation", async () => {
    const [a, b] = [await connect(), await connect()];
    for (const level of ['SERIALIZABLE', 'REPEATABLE READ']) {
      await a.query('BEGIN');
      await a.query(`SET TRANSACTION ISOLATION LEVEL ${level}`);
      expect(await value(a, 'SELECT f_one()')).toBe(1);
      expect(await value(a, 'SHOW transaction_isolation')).toBe(level.toLowerCase());
      await a.query('COMMIT');
      expect(await value(b, 'SELECT 1')).toBe(1);
      expect(await value(b, 'SHOW transaction_isolation')).toBe('read committed');
      expect(await value(a, 'SHOW transaction_isolation')).toBe('read committed');
    }
    // A try-lock, a DO block and set_config with a parameter make the proxy ask the backend too.
    await a.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
    await a.query('SELECT pg_try_advisory_xact_lock(7)');
    await a.query('DO $$BEGIN PERFORM 1; END$$');
    await a.query({ text: 'SELECT set_config($1, $2, false)', values: ['myapp.p', 'v'] });
    await a.query('COMMIT');
    expect(await value(b, 'SELECT 1')).toBe(1);
    expect(await value(a, "SELECT current_setting('myapp.p')")).toBe('v');
  });
});

describe('a backend that cannot be given a client’s settings', () => {
  it('is closed; the request behind it did not run and answers the error; the session goes on', async () => {
    const [a, b] = [await connect(), await connect()];
    await a.query(`CREATE TEXT SEARCH CONFIGURATION "${repo}".cfg (COPY = english)`);
    await a.query(`SET default_text_search_config = '"${repo}".cfg'`);
    expect(await value(a, 'SHOW default_text_search_config')).toBe(`"${repo}".cfg`);
    await b.query(`DROP TEXT SEARCH CONFIGURATION "${repo}".cfg`); // b's turn on the backend resets a's setting there
    const backendBefore = await value<number>(b, 'SELECT count(*)::int FROM items');
    const e = await failure(a, "INSERT INTO items (v) VALUES ('must not land')");
    expect(e.code).toBe('22023');
    expect(e.message).toMatch(/^could not give a pooled backend your session's settings: invalid value for parameter "default_text_search_config": .*; "default_text_search_config" was reset to its default$/);
    expect(await value<number>(b, 'SELECT count(*)::int FROM items')).toBe(backendBefore); // the insert did not run
    expect(await value(b, 'SELECT 1')).toBe(1);
    expect(await value(a, 'SHOW default_text_search_config')).toBe(await value(b, 'SHOW default_text_search_config'));
    await a.query("INSERT INTO items (v) VALUES ('lands')");
    expect(await value<number>(b, 'SELECT count(*)::int FROM items')).toBe(backendBefore + 1);
  });
});

describe('pins end with what made them', () => {
  it('a temporary table ON COMMIT DROP, and a temporary table, LISTEN or WITH HOLD cursor rolled back, leave the backend to others', async () => {
    const [a, b] = [await connect(), await connect()];
    const pins = [
      ['BEGIN', 'CREATE TEMP TABLE gone (v int) ON COMMIT DROP', 'COMMIT'],
      ['BEGIN', 'CREATE TEMP TABLE gone (v int)', 'ROLLBACK'],
      ['BEGIN', 'LISTEN gone', 'ROLLBACK'],
      ['BEGIN', 'DECLARE gone CURSOR WITH HOLD FOR SELECT 1', 'ROLLBACK'],
    ];
    for (const steps of pins) {
      for (const sql of steps) await a.query(sql);
      // The only backend of the user: b waits for it (53300 within the pool timeout) if a still holds it.
      expect(await value(b, 'SELECT 1'), steps.join('; ')).toBe(1);
    }
  });
});

describe('statements prepared again', () => {
  it('a SQL PREPARE that cannot be made again (its table dropped) fails the EXECUTE with that error, as Postgres does', async () => {
    const [a, b] = [await connect(), await connect()];
    await a.query('CREATE TABLE dropped (v int)');
    await a.query('PREPARE q AS SELECT v FROM dropped');
    await b.query('DISCARD ALL'); // the backend holds no statement of anybody's now
    await b.query('DROP TABLE dropped');
    const e = await failure(a, 'EXECUTE q');
    expect(e).toEqual({ code: '42P01', message: 'relation "dropped" does not exist' });
    await a.query('CREATE TABLE dropped (v int)');
    await a.query('INSERT INTO dropped VALUES (5)');
    expect(await value(a, 'EXECUTE q')).toBe(5);
  });
});

describe('the search_path as frameworks set it', () => {
  it('public on the path passes over (Django, Rails); SET LOCAL search_path lasts until the transaction ends; a rolled-back SET is undone', async () => {
    const c = await connect();
    await c.query(`SET search_path = "${repo}", public`);
    expect(await value(c, 'SELECT count(*)::int FROM items')).toBeGreaterThanOrEqual(0);
    await c.query(`CREATE TABLE made_here (a int)`);
    expect(await value(c, "SELECT to_regclass('made_here')::text")).toBe('made_here');
    // SET LOCAL: the other repo (read-only for alice) until COMMIT, then her own again.
    await c.query('BEGIN');
    await c.query(`SET LOCAL search_path = "${bob.name}/open"`);
    expect(await value(c, 'SHOW search_path')).toBe(`"${bob.name}/open"`);
    expect((await failure(c, 'CREATE TABLE nope (a int)')).code).toBe('42501');
    await c.query('ROLLBACK');
    expect(await value(c, 'SHOW search_path')).toBe(`"${repo}", public`);
    await c.query('CREATE TABLE made_after_local (a int)');
    expect(await value(c, `SELECT set_config('search_path', '"${bob.name}/open"', true)`)).toBe(`"${bob.name}/open"`); // ends with its statement
    await c.query('CREATE TABLE made_after_set_config (a int)');
    // A session SET in a transaction that rolls back is undone, for the policy too.
    await c.query('BEGIN');
    await c.query(`SET search_path = "${bob.name}/open"`);
    await c.query('ROLLBACK');
    await c.query('CREATE TABLE made_after_rollback (a int)');
    expect(await value(c, "SELECT count(*)::int FROM pg_tables WHERE tablename LIKE 'made_%'")).toBe(4);
  });
});

describe("sequences: currval and lastval are the client's own", () => {
  it('in the transaction of the nextval, after another client used the backend', async () => {
    const [a, b] = [await connect(), await connect()];
    await b.query('SELECT 1');
    await a.query('BEGIN');
    const id = await value<number>(a, "INSERT INTO items (v) VALUES ('y') RETURNING id");
    expect(Number(await value(a, "SELECT currval(pg_get_serial_sequence('items', 'id'))"))).toBe(id);
    expect((await a.query('COMMIT')).command).toBe('COMMIT');
    expect(await value(b, `SELECT count(*)::int FROM items WHERE id = ${id}`)).toBe(1);
  });

  it('in later statements and transactions, whoever used the backend since (PHP lastInsertId, ORMs)', async () => {
    const [a, b] = [await connect(), await connect()];
    const mine = Number(await value(a, "SELECT nextval('s')"));
    const theirs = Number(await value(b, "SELECT nextval('s')"));
    expect(theirs).toBe(mine + 1);
    expect(Number(await value(a, "SELECT currval('s')"))).toBe(mine);
    expect(Number(await value(a, 'SELECT lastval()'))).toBe(mine);
    expect(Number(await value(b, 'SELECT lastval()'))).toBe(theirs);
    // A serial column's default, then lastval in a statement of its own.
    await a.query("INSERT INTO items (v) VALUES ('a')");
    await b.query("INSERT INTO items (v) VALUES ('b')");
    const aId = await value<number>(a, "SELECT max(id) FROM items WHERE v = 'a'");
    expect(Number(await value(a, 'SELECT lastval()'))).toBe(aId);
    expect(Number(await value(a, "SELECT currval('items_id_seq')"))).toBe(aId);
    // setval too, and DISCARD SEQUENCES forgets everything, as Postgres does.
    await a.query("SELECT setval('s', 500)");
    await b.query("SELECT nextval('s')");
    expect(Number(await value(a, "SELECT currval('s')"))).toBe(500);
    await a.query('DISCARD SEQUENCES');
    expect((await failure(a, "SELECT currval('s')")).code).toBe('55000');
    expect((await failure(a, 'SELECT lastval()')).code).toBe('55000');
    // A client that never used a sequence sees none of the others'.
    const c = await connect();
    expect(await failure(c, "SELECT currval('s')")).toEqual({ code: '55000', message: 'currval of sequence "s" is not yet defined in this session' });
    expect(await failure(c, 'SELECT lastval()')).toEqual({ code: '55000', message: 'lastval is not yet defined in this session' });
  });
});

describe('custom settings another client set on the backend', () => {
  it('do not exist for a client that never set them: SHOW is 42704, current_setting(…, true) NULL, as on a backend of its own', async () => {
    const [a, b] = [await connect(), await connect()];
    await b.query("SET myapp.x = 'b'");
    await b.query("SELECT set_config('myapp.y', 'b', false)");
    await b.query('BEGIN');
    await b.query("SET LOCAL myapp.z = 'b'");
    await b.query('ROLLBACK');
    for (const name of ['myapp.x', 'myapp.y', 'myapp.z', 'repobase.backend_pid']) {
      expect(await failure(a, `SHOW ${name}`)).toEqual({ code: '42704', message: `unrecognized configuration parameter "${name}"` });
      expect(await failure(a, `SELECT current_setting('${name}')`)).toEqual({ code: '42704', message: `unrecognized configuration parameter "${name}"` });
      expect(await value(a, `SELECT current_setting('${name}', true)`)).toBeNull();
    }
    // In a string, the statements before the SHOW run (and roll back with it), as in Postgres.
    expect(await failure(a, "SELECT 1; SHOW myapp.x; SELECT 2")).toEqual({ code: '42704', message: 'unrecognized configuration parameter "myapp.x"' });
    // b set them: they exist for it (myapp.z empty, as after its rolled-back SET LOCAL).
    expect(await value(b, 'SHOW myapp.x')).toBe('b');
    expect(await value(b, "SELECT current_setting('myapp.z', true)")).toBe('');
    // Once a sets one, it exists for a too; RESET leaves it, empty.
    await a.query("SET myapp.x = 'a'");
    await a.query('RESET myapp.x');
    expect(await value(a, 'SHOW myapp.x')).toBe('');
    expect(await value(a, "SELECT current_setting('myapp.x', true)")).toBe('');
  });
});

describe('a reset followed by other statements in one query string', () => {
  it("returns to the client's start-up values, as on a backend of its own (RESET ALL, RESET, SET … TO DEFAULT)", async () => {
    const c = new pg.Client({ ...svc.pgOptions(alice.name, alice.key, repo), application_name: 'mine', options: '-c TimeZone=Asia/Tokyo -c extra_float_digits=0 -c myapp.s=start' });
    c.on('error', () => undefined);
    await c.connect();
    clients.push(c);
    const other = await connect(); // leaves other values on the shared backend
    await other.query("SET TimeZone = 'UTC'; SET extra_float_digits = 3");
    await c.query("SET TimeZone = 'America/New_York'; SET search_path = public; SET myapp.s = 'changed'");
    const rows = async (sql: string) => ((await c.query({ text: sql, rowMode: 'array' })) as unknown as pg.QueryResult[]).map((r) => r.rows[0]?.[0]);
    expect(await rows('RESET ALL; SHOW TimeZone; SHOW search_path; SHOW extra_float_digits; SHOW application_name; SHOW myapp.s; SELECT count(*) FROM items')).toEqual([undefined, 'Asia/Tokyo', `"${repo}"`, '0', 'mine', 'start', expect.anything()]);
    await c.query("SET TimeZone = 'UTC'");
    expect(await rows('RESET TimeZone; SHOW TimeZone')).toEqual([undefined, 'Asia/Tokyo']);
    expect(await rows('SET extra_float_digits TO DEFAULT; SHOW extra_float_digits')).toEqual([undefined, '0']);
    expect(await value(c, 'SHOW TimeZone')).toBe('Asia/Tokyo');
  });
});
