/**
 * Two instances on one cluster, as behind a load balancer: a CancelRequest that reaches the
 * other instance still cancels the statement (through the cancel channel), a wrong secret cancels
 * nothing, and no user hears the channel; pg_terminate_backend of a client's id on the other
 * instance ends that client; and a rolling restart (drain + stop + start of one
 * instance, then of the other) under a client that writes all the time and fails over on 57P01
 * or a lost connection loses no acknowledged write and adds none it did not send.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import { tagOf } from '../../src/wire/cancel.js';
import { CANCEL_CHANNEL, TAG_LOCK_CLASS } from '../../src/wire/cancel-channel.js';
import { testConfig } from '../helpers/cluster.js';
import { freePort } from '../helpers/ports.js';
import { sendCancel } from '../helpers/raw-wire.js';
import { startTestServiceWith, type TestService } from '../helpers/service.js';

const DRAIN_MS = 1_000;

let base: Config;
const configs: Config[] = [];
const instances: TestService[] = [];
let admin: pg.Client;
let user: { name: string; key: string };
const repo = () => `${user.name}/roll`;

beforeAll(async () => {
  base = await testConfig({ drainTimeoutMs: DRAIN_MS });
  // Fixed ports: a restarted instance comes back where the load balancer expects it.
  for (let i = 0; i < 2; i++) configs.push({ ...base, pgPort: await freePort(), httpPort: await freePort() });
  for (const c of configs) instances.push(await startTestServiceWith(c));
  admin = new pg.Client({ connectionString: base.upstreamUrl });
  await admin.connect();
  user = await instances[0]!.user('inst');
  const res = await fetch(`${instances[0]!.httpUrl}/api/v1beta/repos/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'roll' }),
  });
  expect(res.status).toBe(201);
  const c = new pg.Client(instances[1]!.pgOptions(user.name, user.key));
  await c.connect();
  await c.query(`CREATE TABLE "${repo()}".writes (seq int NOT NULL, writer int NOT NULL)`);
  await c.end();
}, 60_000);

afterAll(async () => {
  await admin?.end();
  for (const s of instances) await s.stop().catch(() => undefined);
});

/** The key an instance gave a client at start-up (BackendKeyData). */
function keyOf(c: pg.Client): { processId: number; secretKey: number } {
  const k = c as unknown as { processID: number | null; secretKey: number | null };
  expect(k.processID).not.toBeNull();
  return { processId: k.processID!, secretKey: k.secretKey! };
}

async function sleepingQueries(statement: string): Promise<number> {
  const { rows } = await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND query = $2", [user.name, statement]);
  return Number(rows[0]!.n);
}

describe('cancel across instances', () => {
  it('gives each instance its own tag', async () => {
    const [a, b] = [new pg.Client(instances[0]!.pgOptions(user.name, user.key)), new pg.Client(instances[1]!.pgOptions(user.name, user.key))];
    await Promise.all([a.connect(), b.connect()]);
    try {
      expect(tagOf(keyOf(a).processId)).not.toBe(tagOf(keyOf(b).processId));
      const { rows } = await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::oid AND objsubid = 2 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())", [TAG_LOCK_CLASS]);
      expect(Number(rows[0]!.n)).toBe(2);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it("cancels a statement on instance A with A's key sent to instance B; a wrong secret cancels nothing; no user hears the channel", async () => {
    const [a, b] = instances as [TestService, TestService];
    // A user who tries to listen on the service channel (over the other instance, where the
    // cancel arrives): refused today, and if it ever were not, it must hear nothing.
    const eavesdropper = new pg.Client(b.pgOptions(user.name, user.key));
    await eavesdropper.connect();
    const heard: string[] = [];
    eavesdropper.on('notification', (n) => heard.push(`${n.channel} ${n.payload}`));
    const listened = await eavesdropper.query(`LISTEN ${CANCEL_CHANNEL}`).then(
      () => 'listening',
      (e: Error & { code?: string }) => e.code,
    );
    expect(['42501', 'listening']).toContain(listened);
    const notify = await eavesdropper.query(`NOTIFY ${CANCEL_CHANNEL}, '1:2'`).then(
      () => 'sent',
      (e: Error & { code?: string }) => e.code,
    );
    expect(notify).toBe('42501');

    const sleeper = new pg.Client(a.pgOptions(user.name, user.key));
    await sleeper.connect();
    try {
      const key = keyOf(sleeper);
      const statement = 'SELECT pg_sleep(30) AS slept';
      const outcome = sleeper.query(statement).then(
        () => 'finished',
        (e: Error & { code?: string }) => e.code,
      );
      await expect.poll(() => sleepingQueries(statement), { timeout: 3_000, interval: 20 }).toBe(1);

      // A wrong secret, through B: nothing is cancelled.
      expect((await sendCancel(b.pgPort, key.processId, key.secretKey ^ 0x10)).length).toBe(0);
      expect((await sendCancel(b.pgPort, key.processId, ~key.secretKey)).length).toBe(0);
      await new Promise((r) => setTimeout(r, 500));
      expect(await sleepingQueries(statement)).toBe(1);

      // The right key, through B: cancelled within about a second.
      const sent = Date.now();
      expect((await sendCancel(b.pgPort, key.processId, key.secretKey)).length).toBe(0);
      expect(await outcome).toBe('57014');
      expect(Date.now() - sent).toBeLessThan(1_500);
      // The client goes on with its session.
      expect((await sleeper.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
      await new Promise((r) => setTimeout(r, 100));
      expect(heard).toEqual([]);
    } finally {
      await sleeper.end().catch(() => undefined);
      await eavesdropper.end().catch(() => undefined);
    }
  });

  it('goes on when the channel connection is killed: the tag is claimed again and cancels still cross', async () => {
    const [a, b] = instances as [TestService, TestService];
    const sleeper = new pg.Client(a.pgOptions(user.name, user.key));
    await sleeper.connect();
    try {
      const key = keyOf(sleeper);
      const holder = async () =>
        (
          await admin.query<{ pid: number }>(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::oid AND objid = $2::oid AND objsubid = 2 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [TAG_LOCK_CLASS, tagOf(key.processId)],
          )
        ).rows[0]?.pid;
      const before = await holder();
      expect(before).toBeDefined();
      await admin.query('SELECT pg_terminate_backend($1)', [before]);
      // Reconnected (after half a second's back-off) with the same tag.
      await expect.poll(async () => ((await holder()) ?? before) !== before, { timeout: 5_000, interval: 100 }).toBe(true);

      const statement = 'SELECT pg_sleep(30) AS again';
      const outcome = sleeper.query(statement).then(
        () => 'finished',
        (e: Error & { code?: string }) => e.code,
      );
      await expect.poll(() => sleepingQueries(statement), { timeout: 3_000, interval: 20 }).toBe(1);
      await sendCancel(b.pgPort, key.processId, key.secretKey);
      expect(await outcome).toBe('57014');
    } finally {
      await sleeper.end().catch(() => undefined);
    }
  });

  it("pg_terminate_backend on instance B of a client's id from instance A ends that client (the same user's only)", async () => {
    const [a, b] = instances as [TestService, TestService];
    const victim = new pg.Client(a.pgOptions(user.name, user.key));
    const errors: (string | undefined)[] = [];
    victim.on('error', (e: Error & { code?: string }) => errors.push(e.code));
    await victim.connect();
    const other = await instances[0]!.user('instother');
    const stranger = new pg.Client(b.pgOptions(other.name, other.key));
    const control = new pg.Client(b.pgOptions(user.name, user.key));
    await stranger.connect();
    await control.connect();
    try {
      const { processId } = keyOf(victim);
      await victim.query('SELECT 1');
      // Another user's try goes across too, and is dropped by the owner.
      await stranger.query(`SELECT pg_terminate_backend(${processId})`);
      await new Promise((r) => setTimeout(r, 300));
      expect((await victim.query('SELECT 2 AS n')).rows[0].n).toBe(2);
      expect((await control.query('SELECT pg_terminate_backend($1) AS t', [processId])).rows[0].t).toBe(true);
      await expect.poll(() => errors, { timeout: 5_000, interval: 20 }).toContain('57P01');
    } finally {
      for (const c of [victim, stranger, control]) await c.end().catch(() => undefined);
    }
  });
});

// ── rolling restart ─────────────────────────────────────────────────────────────────────────

const ADMIN_SHUTDOWN = '57P01';

/** What a client that fails over may see during a restart: the drain's 57P01 or a lost connection. */
function isFailover(err: Error & { code?: string }): boolean {
  if (err.code === ADMIN_SHUTDOWN || err.code?.startsWith('08')) return true;
  if (err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET' || err.code === 'EPIPE') return true;
  return /Connection terminated|not queryable|Client was closed|Connection refused/i.test(err.message);
}

/**
 * A client that inserts (seq, writer) one row at a time, autocommit, through whichever instance
 * answers, starting at `first` and moving to the next on 57P01 or a lost connection.
 */
class Writer {
  readonly acked: number[] = [];
  /** Sent, then the connection failed before the answer: committed or not, nobody knows. */
  readonly uncertain: number[] = [];
  readonly failovers: string[] = [];
  readonly unexpected: string[] = [];
  private seq = 0;
  private stopped = false;
  readonly done: Promise<void>;

  constructor(
    readonly id: number,
    private next: number,
  ) {
    this.done = this.run();
  }

  stop(): Promise<void> {
    this.stopped = true;
    return this.done;
  }

  private async connect(): Promise<pg.Client> {
    for (;;) {
      const port = configs[this.next % configs.length]!.pgPort;
      const client = new pg.Client({ host: '127.0.0.1', port, user: user.name, password: user.key, database: base.serviceDatabase });
      client.on('error', (err: Error) => this.note(err)); // a FATAL while idle (the next query fails too)
      try {
        await client.connect();
        return client;
      } catch (err: unknown) {
        this.note(err as Error);
        await client.end().catch(() => undefined);
        this.next++;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  private note(err: Error & { code?: string }): void {
    (isFailover(err) ? this.failovers : this.unexpected).push(`${err.code ?? ''} ${err.message}`);
  }

  private async run(): Promise<void> {
    let client = await this.connect();
    while (!this.stopped) {
      const seq = ++this.seq;
      try {
        await client.query(`INSERT INTO "${repo()}".writes (seq, writer) VALUES ($1, $2)`, [seq, this.id]);
        this.acked.push(seq);
      } catch (err: unknown) {
        this.uncertain.push(seq);
        this.note(err as Error);
        await client.end().catch(() => undefined);
        this.next++; // the load balancer's other instance
        client = await this.connect();
      }
    }
    await client.end().catch(() => undefined);
  }
}

describe('rolling restart', () => {
  it('loses no acknowledged write and adds none: clients see only 57P01 or lost connections', async () => {
    const writers = [new Writer(1, 0), new Writer(2, 1)];
    const progress = () => writers.reduce((n, w) => n + w.acked.length, 0);
    /** Waits until the writers have made `n` more acknowledged writes. */
    const advance = async (n: number) => {
      const from = progress();
      await expect.poll(progress, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(from + n);
    };
    await advance(50);
    for (const i of [0, 1]) {
      const drained = Date.now();
      await instances[i]!.drain();
      await instances[i]!.stop();
      expect(Date.now() - drained).toBeLessThan(DRAIN_MS + 2_000); // autocommit writers: nothing to wait for
      await advance(30); // on the other instance alone
      instances[i] = await startTestServiceWith(configs[i]!);
      await advance(30);
    }
    await Promise.all(writers.map((w) => w.stop()));

    const { rows } = await admin.query<{ seq: number; writer: number }>(`SELECT seq, writer FROM "${repo()}".writes`);
    for (const w of writers) {
      expect(w.unexpected).toEqual([]);
      const stored = rows.filter((r) => r.writer === w.id).map((r) => r.seq);
      expect(new Set(stored).size).toBe(stored.length); // no duplicate
      const storedSet = new Set(stored);
      expect(w.acked.filter((s) => !storedSet.has(s))).toEqual([]); // no acknowledged write lost
      const sent = new Set([...w.acked, ...w.uncertain]);
      expect(stored.filter((s) => !sent.has(s))).toEqual([]); // nothing that was not sent
      expect(w.uncertain.length).toBeLessThanOrEqual(w.failovers.length);
    }
    // Both writers had to move at least once (each instance went away under one of them).
    const seen = JSON.stringify(writers.map((w) => w.failovers));
    expect(writers.every((w) => w.failovers.length > 0), seen).toBe(true);
    expect(writers.flatMap((w) => w.failovers).some((f) => f.startsWith(ADMIN_SHUTDOWN)), seen).toBe(true);
  }, 60_000);
});
