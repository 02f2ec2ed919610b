/**
 * pg_terminate_backend and pg_cancel_backend of another wire client's process id, pooling by
 * transaction: that id is not a backend's, yet a user ends or cancels their own other sessions as
 * with Postgres (psycopg2 and node-postgres' own tests do it), idle or in a transaction, and the
 * signal reaches no other user's client — neither through the functions nor through the notice
 * they raise, raised by hand.
 */
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../bench/lib/proc.js';
import { packageRoot } from '../../src/shared/package-root.js';
import { startTestService, type TestService } from '../helpers/service.js';

/** Debian's Python, where python3-psycopg2 installs (a python3 earlier on PATH may lack it). */
const PYTHON = process.env.REPOBASE_TEST_PYTHON ?? '/usr/bin/python3';

type Who = { name: string; key: string };
let svc: TestService;
let alice: Who;
let bob: Who;
let table: string;
const clients: pg.Client[] = [];

async function connect(who: Who): Promise<pg.Client & { errors: Error[] }> {
  const client = Object.assign(new pg.Client(svc.pgOptions(who.name, who.key)), { errors: [] as Error[] });
  client.on('error', (err) => client.errors.push(err));
  await client.connect();
  clients.push(client);
  return client;
}

async function pidOf(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  expect(rows[0]!.pid).toBe((client as unknown as { processID: number }).processID);
  return rows[0]!.pid;
}

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 2 });
  alice = await svc.user('alice');
  bob = await svc.user('bob');
  await svc.control.createRepo({ owner: alice.name, repo: 'sig' });
  const a = await connect(alice);
  table = `"${alice.name}/sig".t`;
  await a.query(`CREATE TABLE ${table} (v int)`);
  await a.end();
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc?.stop();
});

describe('pg_terminate_backend of another client of the same user', () => {
  it('ends an idle client (no backend held) from inside a transaction: its next statement fails, the caller goes on', async () => {
    const victim = await connect(alice);
    const control = await connect(alice);
    const pid = await pidOf(victim);
    await control.query('BEGIN');
    const { rows } = await control.query<{ t: boolean }>('SELECT pg_terminate_backend($1::int) AS t', [pid]);
    expect(rows[0]!.t).toBe(true);
    const failed = (await victim.query('SELECT 1').then(() => undefined, (e: unknown) => e)) as { code?: string } | undefined;
    expect(failed).toBeDefined();
    expect([failed!.code, ...victim.errors.map((e) => (e as { code?: string }).code)]).toContain('57P01');
    await control.query('COMMIT');
    expect((await control.query('SELECT 2 AS n')).rows[0].n).toBe(2);
  });

  it('ends a client in a transaction: what it wrote is rolled back, and the backends serve others afterwards', async () => {
    const victim = await connect(alice);
    const control = await connect(alice);
    const pid = await pidOf(victim);
    await victim.query('BEGIN');
    await victim.query(`INSERT INTO ${table} VALUES (1)`);
    await control.query(`SELECT pg_terminate_backend(${pid})`);
    await expect.poll(() => victim.errors.length, { timeout: 5_000 }).toBeGreaterThan(0);
    await expect(victim.query('COMMIT')).rejects.toThrow();
    const after = await connect(alice);
    expect((await after.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBe(0);
    await after.query(`INSERT INTO ${table} VALUES (2)`);
    expect((await control.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBe(1);
  });

  it('psycopg2: the external close of its own test suite (a victim ended behind its back, ten times)', async () => {
    const dsn = `host=127.0.0.1 port=${svc.pgPort} dbname=repobase user=${alice.name} password=${alice.key} sslmode=disable`;
    const script = join(packageRoot, 'test', 'fixtures', 'drivers', 'external_close.py');
    const r = await run(PYTHON, [script, dsn], { timeoutMs: 60_000 });
    expect(r.stdout.trim(), r.stderr).toBe('ok');
  });
});

describe('pg_cancel_backend of another client of the same user', () => {
  it('cancels its running statement, and the client goes on', async () => {
    const victim = await connect(alice);
    const control = await connect(alice);
    const pid = await pidOf(victim);
    const sleeping = victim.query('SELECT pg_sleep(30)');
    await expect.poll(async () => (await svc.control.admin.query("SELECT 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")).rowCount, { timeout: 5_000 }).toBe(1);
    expect((await control.query('SELECT pg_cancel_backend($1) AS t', [pid])).rows[0].t).toBe(true);
    await expect(sleeping).rejects.toMatchObject({ code: '57014' });
    expect((await victim.query('SELECT 3 AS n')).rows[0].n).toBe(3);
  });
});

describe('another user', () => {
  it("cannot end or cancel alice's clients, by the functions or by the notice they raise", async () => {
    const victim = await connect(alice);
    const pid = await pidOf(victim);
    const b = await connect(bob);
    await b.query(`SELECT pg_terminate_backend(${pid})`).catch(() => undefined);
    await b.query(`SELECT pg_cancel_backend(${pid})`).catch(() => undefined);
    await b.query(`DO $$ BEGIN RAISE NOTICE USING ERRCODE = 'RBSIG', MESSAGE = 'terminate ${pid}'; END $$`);
    // Whatever bob sent went out before this: a signal acted on would have ended alice's client.
    await new Promise((r) => setTimeout(r, 200));
    expect((await victim.query('SELECT 4 AS n')).rows[0].n).toBe(4);
    expect(victim.errors).toEqual([]);
    // The same notice raised by alice herself ends her own client, as the function would.
    const control = await connect(alice);
    await control.query(`DO $$ BEGIN RAISE NOTICE USING ERRCODE = 'RBSIG', MESSAGE = 'terminate ${pid}'; END $$`);
    await expect.poll(() => victim.errors.length, { timeout: 5_000 }).toBeGreaterThan(0);
  });
});
