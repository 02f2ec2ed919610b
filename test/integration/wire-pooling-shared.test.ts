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
  svc = await startTestService({ pgSessionsPerUser: 1 });
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'shared' });
  repo = `${alice.name}/shared`;
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
