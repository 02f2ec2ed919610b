/**
 * LISTEN/NOTIFY with plain channel names: each user's channels are their own (upstream under
 * "<user>/…"), the client sees the name it used, old-style "<user>/…" names keep working, and
 * the service's channels stay out of reach.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

type Who = { name: string; key: string };
let svc: TestService;
let alice: Who;
let bob: Who;
const clients: pg.Client[] = [];

async function connect(who: Who): Promise<pg.Client> {
  const client = new pg.Client(svc.pgOptions(who.name, who.key));
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

/** Notifications a client receives, as "channel payload". */
function heard(client: pg.Client): string[] {
  const got: string[] = [];
  client.on('notification', (n) => got.push(`${n.channel} ${n.payload ?? ''}`));
  return got;
}

/** Waits until `marker` arrives on `list` (sent last, so everything before it has arrived too). */
async function until(list: string[], marker: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!list.includes(marker) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(list).toContain(marker);
}

beforeAll(async () => {
  svc = await startTestService();
  [alice, bob] = await Promise.all([svc.user('alice'), svc.user('bob')]);
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc.stop();
});

describe('plain channel names', () => {
  it('two users listening on "news" never hear each other', async () => {
    const [a1, a2, b1, b2] = await Promise.all([connect(alice), connect(alice), connect(bob), connect(bob)]);
    const aliceHears = heard(a1);
    const bobHears = heard(b1);
    await a1.query('LISTEN news');
    await b1.query('LISTEN news');
    await a2.query("NOTIFY news, 'from alice'");
    await a2.query("SELECT pg_notify('news', 'alice again')");
    await b2.query("NOTIFY news, 'from bob'");
    await b2.query({ text: 'SELECT pg_notify($1, $2)', values: ['news', 'bob extended'] });
    await a2.query("NOTIFY news, 'done'");
    await b2.query("NOTIFY news, 'done'");
    await until(aliceHears, 'news done');
    await until(bobHears, 'news done');
    expect(aliceHears).toEqual(['news from alice', 'news alice again', 'news done']);
    expect(bobHears).toEqual(['news from bob', 'news bob extended', 'news done']);
    // Shown by the name the client listened to, as on a backend of its own (upstream it is "<user>/news").
    const listening = await a1.query('SELECT pg_listening_channels() AS c');
    expect(listening.rows).toEqual([{ c: 'news' }]);
  });

  it('UNLISTEN stops it, UNLISTEN * stops all', async () => {
    const [a1, a2] = await Promise.all([connect(alice), connect(alice)]);
    const got = heard(a1);
    await a1.query('LISTEN "Quoted Name"; LISTEN other');
    await a1.query('UNLISTEN "Quoted Name"');
    await a2.query(`NOTIFY "Quoted Name", 'missed'; NOTIFY other, 'kept'`);
    await until(got, 'other kept');
    expect(got).toEqual(['other kept']);
    await a1.query('UNLISTEN *');
    expect((await a1.query('SELECT count(*)::int AS n FROM pg_listening_channels()')).rows[0].n).toBe(0);
  });

  it('old-style "<user>/…" names keep working, with each other and with plain names', async () => {
    const [oldStyle, plain, sender] = await Promise.all([connect(alice), connect(alice), connect(alice)]);
    const oldHears = heard(oldStyle);
    const plainHears = heard(plain);
    await oldStyle.query(`LISTEN "${alice.name}/events"`);
    await plain.query('LISTEN events');
    await sender.query(`NOTIFY "${alice.name}/events", 'one'`);
    await sender.query("NOTIFY events, 'two'");
    await until(oldHears, `${alice.name}/events two`);
    await until(plainHears, 'events two');
    expect(oldHears).toEqual([`${alice.name}/events one`, `${alice.name}/events two`]);
    expect(plainHears).toEqual(['events one', 'events two']);
  });

  it('keeps the service channels out of reach', async () => {
    const client = await connect(alice);
    for (const sql of ['LISTEN repobase_schema', 'LISTEN repobase_cancel', "NOTIFY repobase_schema, 'x'"]) {
      await expect(client.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    }
    // pg_notify lands in alice's namespace whatever the name.
    await client.query("SELECT pg_notify('repobase_schema', 'x')");
  });
});

describe('who sent a notification', () => {
  it("a NOTIFY rolled back leaves the sender's next notification named after it, not its backend", async () => {
    const [listener, sender] = await Promise.all([connect(alice), connect(alice)]);
    const from: number[] = [];
    listener.on('notification', (n) => from.push(n.processId));
    await listener.query('LISTEN senders');
    await sender.query('BEGIN');
    await sender.query("NOTIFY senders, 'never'");
    await sender.query('ROLLBACK');
    await sender.query("NOTIFY senders, 'one'");
    await sender.query('BEGIN');
    await sender.query("SELECT pg_notify('senders', 'two')");
    await sender.query('COMMIT');
    const deadline = Date.now() + 10_000;
    while (from.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const pid = (sender as unknown as { processID: number }).processID;
    expect(from).toEqual([pid, pid]);
  });
});
