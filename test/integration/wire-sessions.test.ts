/**
 * Clients that leave with work in flight release their upstream session at once: hundreds of
 * clients that send a statement and go (Terminate right behind it, or the socket just closed)
 * leave no session busy, nothing re-acquired in a loop, and room for the next client — also one
 * whose start-up settings differ from every pooled session's. In both pool modes.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildQuery, buildTerminate } from '../../src/protocol/index.js';
import { RawClient, q } from '../helpers/raw-wire.js';
import { startTestService, type TestService } from '../helpers/service.js';

const CAP = 12;

describe.each(['transaction', 'session'] as const)('pgPoolMode %s', (mode) => {
  let svc: TestService;
  let admin: pg.Client;
  let alice: { name: string; key: string };

  const target = () => ({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: alice.key });

  /** The user's upstream backends, by state. */
  async function backends(): Promise<{ pid: number; state: string; query: string }[]> {
    const { rows } = await admin.query<{ pid: number; state: string; query: string }>('SELECT pid, state, query FROM pg_stat_activity WHERE usename = $1 ORDER BY pid', [alice.name]);
    return rows;
  }

  /** Waits until `check` holds (up to `ms`); returns how long it took. */
  async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
    const start = Date.now();
    while (!(await check())) {
      if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
    return Date.now() - start;
  }

  const busy = (rows: { state: string }[]) => rows.filter((r) => r.state !== 'idle');

  beforeAll(async () => {
    svc = await startTestService({ pgSessionsPerUser: CAP, pgPoolMode: mode });
    alice = await svc.user('alice');
    admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await svc?.stop();
  });

  describe('a client that leaves releases its upstream session at once', () => {
    it('hundreds of clients that send a statement and leave: nothing stays busy, nothing loops', async () => {
      const clients = await Promise.all(Array.from({ length: 300 }, () => RawClient.connect(target())));
      // Half end with Terminate right behind the statement, half just close the socket.
      clients.forEach((c, i) => (i % 2 ? c.sendAndLeave([buildQuery('SELECT pg_sleep(0.3)'), buildTerminate()]) : c.sendAndLeave([buildQuery('SELECT pg_sleep(0.3)')])));
      // The sessions taken for their statements are back, idle, within a second of their leaving.
      await new Promise((r) => setTimeout(r, 1000));
      const settled = await backends();
      expect(busy(settled)).toEqual([]);
      expect(settled.length).toBeGreaterThan(0);
      expect(settled.length).toBeLessThanOrEqual(CAP);
      // No loop: the same idle backends a moment later, none re-acquired or reset again.
      await new Promise((r) => setTimeout(r, 1000));
      const later = await backends();
      expect(later.map((r) => r.pid)).toEqual(settled.map((r) => r.pid));
      expect(later.every((r) => r.state === 'idle')).toBe(true);
      // Session mode resets a backend its client leaves (or closes it, when it left in the middle
      // of a statement): what is left ran nothing of anybody's, or was reset. Pooling by
      // transaction keeps what a backend holds (the proxy knows it).
      if (mode === 'session') for (const r of later) expect(['', 'DISCARD ALL']).toContain(r.query);
    });

    it('a statement in flight when its client leaves is cancelled upstream', async () => {
      const clients = await Promise.all(Array.from({ length: CAP }, () => RawClient.connect(target())));
      for (const c of clients) await c.send([q('SELECT 1')], 1); // each holds an upstream session now
      // Each sends a statement of 30 s and leaves once Postgres runs it (leaving right behind it, the
      // proxy may cancel it before a look at pg_stat_activity sees it run: a race of the test's own).
      for (const c of clients) void c.send([buildQuery('SELECT pg_sleep(30)')], 1).catch(() => undefined);
      await within(5_000, async () => (await backends()).some((r) => r.query === 'SELECT pg_sleep(30)' && r.state === 'active'));
      for (const c of clients) c.close();
      const took = await within(1000, async () => !(await backends()).some((r) => r.query === 'SELECT pg_sleep(30)' && r.state === 'active'));
      expect(took).toBeLessThan(1000);
    });

    it('then a client with other start-up settings gets a session in under a second', async () => {
      // Fill the user's sessions with idle ones of the default settings, then ask with other settings.
      const holders = await Promise.all(Array.from({ length: CAP }, () => RawClient.connect(target())));
      // All at once, each in a transaction: CAP backends (pooling by transaction gives them back at COMMIT).
      await Promise.all(holders.map((h) => h.send([q('BEGIN'), q('SELECT 1')], 2)));
      for (const h of holders) await h.send([q('COMMIT')], 1);
      for (const h of holders) h.close();
      await within(1000, async () => (await backends()).filter((r) => r.state === 'idle').length === CAP);
      const start = Date.now();
      const other = new pg.Client({ ...svc.pgOptions(alice.name, alice.key), application_name: 'other settings', options: '-c statement_timeout=5s' });
      await other.connect();
      const { rows } = await other.query('SHOW statement_timeout');
      expect(Date.now() - start).toBeLessThan(1000);
      expect(rows).toEqual([{ statement_timeout: '5s' }]);
      await other.end();
    });
  });
});
