/**
 * Pooling by transaction, what can go wrong: a cancel reaches only the backend serving its client
 * at that moment — never another client's statement on the backend the client used before — and
 * a backend that dies ends the transaction it was running with Postgres' own FATAL, while a
 * client between transactions simply gets another one.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendCancel } from '../helpers/raw-wire.js';
import { backendOf } from '../helpers/backend-of.js';
import { startTestService, type TestService } from '../helpers/service.js';

type Who = { name: string; key: string };
let svc: TestService;
let admin: pg.Client;
let alice: Who;
const clients: pg.Client[] = [];

async function connect(): Promise<pg.Client> {
  const client = new pg.Client(svc.pgOptions(alice.name, alice.key));
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

function keyOf(client: pg.Client): { pid: number; secret: number } {
  const c = client as unknown as { processID: number; secretKey: number };
  return { pid: c.processID, secret: c.secretKey };
}

function backendPid(client: pg.Client): Promise<number> {
  return backendOf(client, admin);
}

/** Runs `work` while one of the user's two backends is held in a transaction: everything else shares the other. */
async function onOneBackend<T>(work: () => Promise<T>): Promise<T> {
  const holder = await connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1');
  try {
    return await work();
  } finally {
    await holder.query('COMMIT');
    await holder.end();
  }
}

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 2 });
  alice = await svc.user('alice');
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await admin?.end();
  await svc?.stop();
});

describe('cancel', () => {
  it("a client's cancel stops its own running statement", async () => {
    const a = await connect();
    const cancelled = expect(a.query('SELECT pg_sleep(30)')).rejects.toMatchObject({ code: '57014' });
    await expect.poll(async () => (await admin.query("SELECT 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")).rowCount, { timeout: 5_000 }).toBe(1);
    const { pid, secret } = keyOf(a);
    await sendCancel(svc.pgPort, pid, secret);
    await cancelled;
  });

  it("a cancel from a client between transactions never stops the statement another client now runs on its former backend", async () => {
    await onOneBackend(async () => {
      const a = await connect();
      const b = await connect();
      const shared = await backendPid(a); // a used it, and gave it back
      const sleeping = b.query('SELECT pg_sleep(0.5) AS slept');
      await expect.poll(async () => (await admin.query("SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(0.5) AS slept' AND state = 'active'")).rows[0]?.pid, { timeout: 5_000 }).toBe(shared);
      const { pid, secret } = keyOf(a);
      for (let i = 0; i < 5; i++) await sendCancel(svc.pgPort, pid, secret);
      expect((await sleeping).rows).toEqual([{ slept: '' }]);
    });
  });

  it('cancels racing with the end of their statement: never one of another client', async () => {
    await onOneBackend(async () => {
      const a = await connect();
      const b = await connect();
      const { pid, secret } = keyOf(a);
      let bCancelled = 0;
      let aCancelled = 0;
      let stop = false;
      // b runs short sleeps back to back on the backend a keeps taking and giving back.
      const bLoop = (async () => {
        while (!stop) await b.query('SELECT pg_sleep(0.01)').catch((e: { code?: string }) => void (e.code === '57014' && bCancelled++));
      })();
      const aLoop = (async () => {
        for (let i = 0; i < 60; i++) {
          const q = a.query('SELECT pg_sleep(0.005)').catch((e: { code?: string }) => void (e.code === '57014' && aCancelled++));
          // The cancel leaves as a's statement ends, often once a has given its backend back to b.
          await new Promise((r) => setTimeout(r, i % 7));
          void sendCancel(svc.pgPort, pid, secret);
          await q;
        }
      })();
      await aLoop;
      stop = true;
      await bLoop;
      expect(bCancelled).toBe(0);
      // a itself may or may not have been cancelled; it goes on.
      expect((await a.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
      expect(aCancelled).toBeGreaterThanOrEqual(0);
    });
  });
});

describe('a backend that dies', () => {
  it('between transactions: the client gets another one, and sees no error', async () => {
    const a = await connect();
    const pid = await backendPid(a);
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await expect.poll(async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount, { timeout: 5_000 }).toBe(0);
    expect((await a.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    expect(await backendPid(a)).not.toBe(pid);
  });

  it("inside a transaction: its client gets Postgres' FATAL 57P01, never a silent retry; others go on", async () => {
    const a = await connect();
    const errors: { code?: string }[] = [];
    a.on('error', (e) => errors.push(e as { code?: string }));
    await a.query('BEGIN');
    const pid = await backendPid(a);
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await expect.poll(() => errors.map((e) => e.code)).toContain('57P01');
    await expect(a.query('SELECT 1')).rejects.toThrow();
    const b = await connect();
    expect((await b.query('SELECT 2 AS ok')).rows).toEqual([{ ok: 2 }]);
  });

  it('while a statement runs: 57P01 for that client', async () => {
    const a = await connect();
    const terminated = expect(a.query('SELECT pg_sleep(30)')).rejects.toMatchObject({ code: '57P01' });
    let pid: number | undefined;
    await expect
      .poll(async () => (pid = (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")).rows[0]?.pid), { timeout: 5_000 })
      .toBeDefined();
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await terminated;
  });
});
