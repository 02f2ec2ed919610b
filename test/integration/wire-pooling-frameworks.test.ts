/**
 * What frameworks and pools do, through pooling by transaction with many clients on few
 * backends: node-postgres' own test that ends its user's idle sessions found in pg_stat_activity,
 * and Rails' and Sequelize's `BEGIN; SET TRANSACTION ISOLATION LEVEL …` with a user's function in
 * the transaction.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let repo: string;

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 3 });
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'app' });
  repo = `${alice.name}/app`;
  const setup = new pg.Client(svc.pgOptions(alice.name, alice.key, repo));
  await setup.connect();
  await setup.query('CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)');
  await setup.query('INSERT INTO accounts SELECT g, 100 FROM generate_series(1, 12) g');
  await setup.query('CREATE FUNCTION balance_of(a int) RETURNS int LANGUAGE sql STABLE AS $$ SELECT balance FROM accounts WHERE id = a $$');
  await setup.end();
});

afterAll(async () => {
  await svc?.stop();
});

describe("node-postgres' pool", () => {
  it('finds its idle sessions in pg_stat_activity and ends them; the client whose session it was gets the error', async () => {
    const pool = new pg.Pool({ ...svc.pgOptions(alice.name, alice.key, repo), max: 4 });
    const errors: string[] = [];
    pool.on('error', (err: Error & { code?: string }) => errors.push(err.code ?? err.message));
    // Four clients in the pool, each having run a statement and gone idle.
    const held = await Promise.all(Array.from({ length: 4 }, () => pool.connect()));
    for (const c of held) await c.query('SELECT 1');
    const killer = held.pop()!;
    for (const c of held) c.release();
    // As node-postgres' connection-pool/error-tests.js does.
    const { rows } = await killer.query("SELECT pid, (SELECT pg_terminate_backend(pid)) AS killed FROM pg_stat_activity WHERE state = $1 AND usename = current_user", ['idle']);
    expect(rows).toHaveLength(3);
    expect(rows.every((r: { killed: boolean }) => r.killed)).toBe(true);
    const deadline = Date.now() + 5000;
    while (errors.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(errors).toEqual(['57P01', '57P01', '57P01']);
    // The one that asked is still there, and the pool makes new ones.
    expect((await killer.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    killer.release();
    expect((await pool.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    await pool.end();
  });
});

describe("Rails' and Sequelize's transactions", () => {
  it('BEGIN; SET TRANSACTION ISOLATION LEVEL …; a user function; COMMIT: 12 clients on 3 backends, none broken or disconnected', async () => {
    const clients = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const c = new pg.Client(svc.pgOptions(alice.name, alice.key, repo));
        await c.connect();
        return c;
      }),
    );
    const levels = ['SERIALIZABLE', 'REPEATABLE READ', 'READ COMMITTED'];
    for (let round = 0; round < 5; round++) {
      await Promise.all(
        clients.map(async (c, i) => {
          const level = levels[(i + round) % levels.length]!;
          await c.query('BEGIN');
          await c.query(`SET TRANSACTION ISOLATION LEVEL ${level}`);
          const { rows } = await c.query('SELECT balance_of($1) AS b, current_setting($2) AS iso', [i + 1, 'transaction_isolation']);
          expect(rows[0]).toEqual({ b: 100 + round, iso: level.toLowerCase() });
          await c.query('UPDATE accounts SET balance = balance + 1 WHERE id = $1', [i + 1]);
          await c.query('COMMIT');
          expect((await c.query('SHOW transaction_isolation')).rows[0].transaction_isolation).toBe('read committed');
        }),
      );
    }
    const { rows } = await clients[0]!.query('SELECT sum(balance)::int AS s FROM accounts');
    expect(rows[0].s).toBe(12 * 105);
    await Promise.all(clients.map((c) => c.end()));
  });
});
