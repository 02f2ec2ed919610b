/**
 * Cancel races: many clients run a statement at once while CancelRequests arrive concurrently,
 * some for one specific client each, some with a key nobody holds. Exactly the targeted statements
 * end with 57014; the others finish normally; an unknown key is dropped (its connection closes
 * without an answer), as Postgres does.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendCancel } from '../helpers/raw-wire.js';
import { startTestService, type TestService } from '../helpers/service.js';

const CLIENTS = 50;
let svc: TestService;
let admin: pg.Client;

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: CLIENTS + 5 });
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await svc?.stop();
});

/** The key the service gave a client at start-up (BackendKeyData). */
function keyOf(c: pg.Client): { processId: number; secretKey: number } {
  const k = c as unknown as { processID: number | null; secretKey: number | null };
  expect(k.processID).not.toBeNull();
  return { processId: k.processID!, secretKey: k.secretKey! };
}

describe('concurrent cancels', () => {
  it('each cancel hits exactly its own client; unknown keys are dropped', async () => {
    const user = await svc.user('racer');
    const clients = await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const c = new pg.Client(svc.pgOptions(user.name, user.key));
        await c.connect();
        await c.query('SELECT 1'); // holds its upstream session from now on
        return c;
      }),
    );
    try {
      const keys = clients.map(keyOf);
      expect(new Set(keys.map((k) => k.processId)).size).toBe(CLIENTS);
      const targeted = (i: number) => i % 2 === 0;
      const outcomes = clients.map((c) =>
        c.query('SELECT pg_sleep(2) AS slept').then(
          (r) => `ok ${JSON.stringify(r.rows)}`,
          (e: Error & { code?: string }) => `error ${e.code}`,
        ),
      );
      const sleeping = async () =>
        Number((await admin.query("SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND query = 'SELECT pg_sleep(2) AS slept'", [user.name])).rows[0].n);
      await expect.poll(sleeping, { timeout: 1_500, interval: 20 }).toBe(CLIENTS);
      // One CancelRequest per client, all at once: the right key for the targeted ones, a wrong
      // secret (a key nobody holds) for the others.
      const answers = await Promise.all(keys.map((k, i) => sendCancel(svc.pgPort, k.processId, targeted(i) ? k.secretKey : k.secretKey ^ 0x5a5a)));
      expect(answers.map((a) => a.length)).toEqual(keys.map(() => 0));
      const results = await Promise.all(outcomes);
      expect(results).toEqual(clients.map((_, i) => (targeted(i) ? 'error 57014' : 'ok [{"slept":""}]')));
      // A cancelled client goes on with its session.
      expect((await clients[0]!.query('SELECT 7 AS n')).rows).toEqual([{ n: 7 }]);
      expect(await sleeping()).toBe(0);
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    }
  });

  it('a cancel with an unknown process id is dropped and leaves the service serving', async () => {
    const user = await svc.user('bystander');
    const c = new pg.Client(svc.pgOptions(user.name, user.key));
    await c.connect();
    try {
      const running = c.query('SELECT pg_sleep(0.5) AS slept');
      expect((await sendCancel(svc.pgPort, 0x7fff_fff0, 12345)).length).toBe(0);
      expect((await running).rows).toEqual([{ slept: '' }]);
      expect((await c.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    } finally {
      await c.end();
    }
  });
});
