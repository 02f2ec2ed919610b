/**
 * Scoped keys on the wire: a key of alice logs in as alice (SCRAM and cleartext), its session
 * runs as the key's own role, the policy refuses what the scope does not allow by the simple and
 * the extended protocol and from psql, the private catalogs show only the scope, a write key's
 * DDL leaves objects owned by alice, an expired key cannot log in, expiry and revocation end an
 * open session, and a key's backends count against its user's limit.
 */
import { execFile } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyRoleName } from '../../src/control/key-roles.js';
import { RawClient, q } from '../helpers/raw-wire.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let sales: string;
let other: string;
let read: { id: string; key: string };
let write: { id: string; key: string };
const clients: pg.Client[] = [];

async function connect(key: string, database?: string): Promise<pg.Client> {
  const c = new pg.Client(svc.pgOptions(alice.name, key, database));
  c.on('error', () => undefined);
  await c.connect();
  clients.push(c);
  return c;
}

async function failure(c: pg.Client, sql: string, values?: unknown[]): Promise<{ code?: string; message: string } | undefined> {
  return c.query(sql, values).then(
    () => undefined,
    (e: { code?: string; message: string }) => e,
  );
}

function psql(url: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('psql', [url, '-X', ...args], { env: { ...process.env, PGCONNECT_TIMEOUT: '10' }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Resolves with the error the server ends a client's session with (a FATAL outside a query). */
function ended(c: pg.Client): Promise<{ code?: string; message: string }> {
  return new Promise((resolve) => c.once('error', (e: { code?: string; message: string }) => resolve(e)));
}

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  sales = `${alice.name}/sales`;
  other = `${alice.name}/other`;
  await svc.control.createRepo({ owner: alice.name, repo: 'sales' });
  await svc.control.createRepo({ owner: alice.name, repo: 'other' });
  const a = await connect(alice.key);
  await a.query(`CREATE TABLE "${sales}".orders (id serial PRIMARY KEY, amount int); INSERT INTO "${sales}".orders (amount) VALUES (10), (20)`);
  await a.query(`CREATE TABLE "${other}".secret (v text); INSERT INTO "${other}".secret VALUES ('classified')`);
  await a.end();
  read = await svc.control.keys.create(alice.name, { name: 'dashboard', repos: [sales], access: 'read' });
  write = await svc.control.keys.create(alice.name, { name: 'etl', repos: [sales], access: 'write' });
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc?.stop();
});

describe('a read key on the wire', () => {
  it('logs in as its user, and its session runs as the key\'s own role', async () => {
    const c = await connect(read.key);
    const who = await c.query('SELECT current_user, session_user');
    expect(who.rows[0]).toEqual({ current_user: keyRoleName(alice.name, read.id), session_user: keyRoleName(alice.name, read.id) });
    expect((await c.query(`SELECT sum(amount)::int AS s FROM "${sales}".orders`)).rows).toEqual([{ s: 30 }]);
  });

  it('is refused writes and other repos by the simple protocol, naming the key', async () => {
    const c = await connect(read.key);
    for (const sql of [
      `INSERT INTO "${sales}".orders (amount) VALUES (1)`,
      `UPDATE "${sales}".orders SET amount = 0`,
      `DELETE FROM "${sales}".orders`,
      `COPY "${sales}".orders FROM STDIN`,
      `SELECT * FROM "${sales}".orders FOR UPDATE`,
      `LOCK "${sales}".orders`,
      `SELECT nextval('"${sales}".orders_id_seq')`,
      'SET default_transaction_read_only = off',
      'BEGIN READ WRITE',
      'DO $$ BEGIN NULL; END $$',
      `VACUUM "${sales}".orders`,
      `SELECT * FROM "${other}".secret`,
    ]) {
      const e = await failure(c, sql);
      expect(e?.code, sql).toBe('42501');
      expect(e?.message, sql).toContain('API key "dashboard"');
    }
    expect((await c.query('SELECT count(*)::int AS n FROM pg_class WHERE false')).rows).toEqual([{ n: 0 }]);
  });

  it('is refused by the extended protocol too', async () => {
    const c = await connect(read.key);
    expect((await failure(c, `INSERT INTO "${sales}".orders (amount) VALUES ($1)`, [1]))?.code).toBe('42501');
    expect((await failure(c, `SELECT * FROM "${other}".secret WHERE v = $1`, ['x']))?.code).toBe('42501');
    expect((await c.query(`SELECT amount FROM "${sales}".orders WHERE id = $1`, [1])).rows).toEqual([{ amount: 10 }]);
  });

  it('is refused the large-object functions of the protocol', async () => {
    const oid = (await svc.control.admin.query<{ oid: number }>("SELECT 'pg_catalog.lo_creat'::regproc::oid::int AS oid")).rows[0]!.oid;
    const raw = await RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: read.key });
    const call = Buffer.alloc(4 + 2 + 2 + 4 + 4 + 2);
    call.writeInt32BE(oid, 0); // function, no format codes, one int4 argument of 4 bytes, text result
    call.writeInt16BE(0, 4);
    call.writeInt16BE(1, 6);
    call.writeInt32BE(4, 8);
    call.writeInt32BE(0x20000, 12);
    call.writeInt16BE(0, 16);
    const frame = Buffer.concat([Buffer.from('F'), Buffer.alloc(4), call]);
    frame.writeInt32BE(frame.length - 1, 1);
    const answers = await raw.sendBytes(frame, 1);
    expect(answers[0]).toMatch(/^E 42501 API key "dashboard" .* cannot use large objects/);
    expect(await raw.send([q('SELECT 1')], 1)).toEqual(['T ?column?', 'D 1', 'C SELECT 1', 'Z I']);
    raw.close();
  });

  it('from psql: refused with the key\'s words, and \\dn and \\dt *.* show only its repo', async () => {
    const url = svc.pgUrl(alice.name, read.key, 'repobase', 'sslmode=require');
    const ins = await psql(url, '-c', `INSERT INTO "${sales}".orders (amount) VALUES (1)`);
    expect(ins.code).not.toBe(0);
    expect(ins.stderr).toContain('is read-only');
    const dn = await psql(url, '-c', '\\dn');
    expect(dn.stdout).toContain(sales);
    expect(dn.stdout).not.toContain(other);
    const dt = await psql(url, '-c', '\\dt *.*');
    expect(dt.stdout).toContain('orders');
    expect(dt.stdout).not.toContain('secret');
    const oid = await psql(url, '-At', '-c', `SELECT to_regclass('"${other}".secret')`);
    expect(oid.stdout.trim()).toBe('');
  });

  it('logs in with cleartext passwords as with SCRAM', async () => {
    const url = svc.pgUrl(alice.name, read.key, 'repobase', 'sslmode=require');
    const r = await psql(url, '-At', '-c', 'SELECT current_user');
    expect(r.stdout.trim()).toBe(keyRoleName(alice.name, read.id));
  });
});

describe('a write key on the wire', () => {
  it('changes rows and structure in a transaction, and the objects are alice\'s', async () => {
    const c = await connect(write.key, sales);
    await c.query('BEGIN');
    await c.query('CREATE TABLE daily (day date, total int)');
    await c.query('ALTER TABLE daily ADD COLUMN note text');
    await c.query("INSERT INTO daily VALUES ('2026-01-01', 3, 'x')");
    await c.query('CREATE INDEX ON orders (amount)');
    await c.query('COMMIT');
    const owners = await svc.control.admin.query<{ owner: string }>(`SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relnamespace = $1::regnamespace`, [`"${sales}"`]);
    expect(owners.rows).toEqual([{ owner: alice.name }]);
    expect((await c.query('SELECT count(*)::int AS n FROM daily')).rows).toEqual([{ n: 1 }]);
    await c.query('DROP TABLE daily');
    expect((await failure(c, `INSERT INTO "${other}".secret VALUES ('x')`))?.code).toBe('42501');
    expect((await failure(c, 'CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$'))?.message).toContain('needs a full API key');
  });

  it('notifies on its user\'s channels, and a read key listens on them', async () => {
    const listener = await connect(read.key);
    await listener.query('LISTEN news');
    const got = new Promise<{ channel: string; payload?: string }>((resolve) => listener.once('notification', resolve));
    const writer = await connect(write.key);
    await writer.query("SELECT pg_notify('news', 'from etl')");
    const n = await got;
    expect(n).toMatchObject({ channel: 'news', payload: 'from etl' });
  });
});

describe('expiry and revocation', () => {
  it('an expired key cannot log in: 28P01 saying when it expired', async () => {
    const key = await svc.control.keys.create(alice.name, { name: 'brief', repos: [sales], access: 'read', expiresAt: new Date(Date.now() + 1000) });
    await new Promise((r) => setTimeout(r, 1200));
    const c = new pg.Client(svc.pgOptions(alice.name, key.key));
    const e = await c.connect().then(
      () => undefined,
      (err: { code?: string; message: string }) => err,
    );
    expect(e?.code).toBe('28P01');
    expect(e?.message).toBe(`API key "brief" (rb_${key.id}) expired at ${key.expiresAt!.toISOString()}`);
  });

  it('the expiry of a key ends its open session within seconds (57P01, saying why)', async () => {
    const key = await svc.control.keys.create(alice.name, { name: 'short', expiresAt: new Date(Date.now() + 1500) });
    const c = await connect(key.key);
    const end = ended(c);
    expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    const e = await end;
    expect(e.code).toBe('57P01');
    expect(e.message).toBe(`terminating connection: API key "short" (rb_${key.id}) expired at ${key.expiresAt!.toISOString()}`);
  });

  it('a revocation ends the open sessions of the key at once, idle or in a transaction', async () => {
    const key = await svc.control.keys.create(alice.name, { name: 'gone', repos: [sales], access: 'write' });
    const idle = await connect(key.key);
    const busy = await connect(key.key);
    await busy.query('BEGIN');
    await busy.query(`INSERT INTO "${sales}".orders (amount) VALUES (999)`);
    const ends = [ended(idle), ended(busy)];
    await svc.control.keys.revoke(key.id, alice.name);
    for (const e of await Promise.all(ends)) {
      expect(e.code).toBe('57P01');
      expect(e.message).toBe(`terminating connection: API key "gone" (rb_${key.id}) was revoked`);
    }
    // The open transaction was rolled back.
    const rows = await svc.control.admin.query(`SELECT count(*)::int AS n FROM "${sales}".orders WHERE amount = 999`);
    expect(rows.rows).toEqual([{ n: 0 }]);
  });
});

describe('backends', () => {
  it("of a key count against its user's limit (pgSessionsPerUser 1 here)", async () => {
    const small = await startTestService({ pgSessionsPerUser: 1, pgPoolTimeoutMs: 10_000 });
    try {
      const bob = await small.user('bob');
      await small.control.createRepo({ owner: bob.name, repo: 'r' });
      const key = await small.control.keys.create(bob.name, { repos: [`${bob.name}/r`], access: 'read' });
      const a = new pg.Client(small.pgOptions(bob.name, bob.key));
      const k = new pg.Client(small.pgOptions(bob.name, key.key));
      await Promise.all([a.connect(), k.connect()]);
      try {
        await a.query('BEGIN');
        await a.query('SELECT 1');
        let done = false;
        const waiting = k.query('SELECT 2 AS two').then((r) => {
          done = true;
          return r.rows;
        });
        await new Promise((r) => setTimeout(r, 500));
        expect(done).toBe(false); // bob's transaction holds the user's one backend
        await a.query('COMMIT');
        expect(await waiting).toEqual([{ two: 2 }]);
        // And the other way round: the key's transaction holds it, bob waits.
        await k.query('BEGIN');
        await k.query('SELECT 1');
        let bobDone = false;
        const bobWaits = a.query('SELECT 3 AS three').then((r) => {
          bobDone = true;
          return r.rows;
        });
        await new Promise((r) => setTimeout(r, 500));
        expect(bobDone).toBe(false);
        await k.query('COMMIT');
        expect(await bobWaits).toEqual([{ three: 3 }]);
      } finally {
        await Promise.all([a.end(), k.end()]);
      }
    } finally {
      await small.stop();
    }
  });
});
