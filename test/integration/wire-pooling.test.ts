/**
 * Pooling by transaction (the default): many clients of one user on two backends
 * (pgSessionsPerUser 2), interleaved, each keeping the session it would have on a backend of its
 * own — settings, prepared statements, what pins it — and never seeing another client's.
 */
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendOf } from '../helpers/backend-of.js';
import { startTestService, type TestService } from '../helpers/service.js';

type Who = { name: string; key: string };
let svc: TestService;
let admin: pg.Client;
let alice: Who;
const clients: pg.Client[] = [];

/** ParameterStatus values each client was told, greeting included. */
const told = new WeakMap<pg.Client, Map<string, string>>();

async function connect(who: Who = alice, extra: Partial<pg.ClientConfig> = {}): Promise<pg.Client> {
  const client = new pg.Client({ ...svc.pgOptions(who.name, who.key), ...extra });
  client.on('error', () => undefined);
  const values = new Map<string, string>();
  told.set(client, values);
  const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
  connection.on('parameterStatus', (m: { parameterName: string; parameterValue: string }) => values.set(m.parameterName, m.parameterValue));
  await client.connect();
  clients.push(client);
  return client;
}

async function one<T = unknown>(client: pg.Client, sql: string, values?: unknown[]): Promise<T> {
  const { rows } = await client.query(sql, values);
  return Object.values(rows[0] as object)[0] as T;
}

/** The user's upstream backends now. */
async function backends(who: Who = alice): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE usename = $1 ORDER BY pid', [who.name]);
  return rows.map((r) => r.pid);
}

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 2 });
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'one' });
  await svc.control.createRepo({ owner: alice.name, repo: 'two' });
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
  const setup = await connect();
  await setup.query(`CREATE TABLE "${alice.name}/one".t (v text)`);
  await setup.query(`INSERT INTO "${alice.name}/one".t VALUES ('one')`);
  await setup.query(`CREATE TABLE "${alice.name}/two".t (v text)`);
  await setup.query(`INSERT INTO "${alice.name}/two".t VALUES ('two')`);
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await admin?.end();
  await svc?.stop();
});

describe('settings follow each client', () => {
  it('interleaved clients keep their own time zone, search_path, application_name and app.x', async () => {
    const zones = ['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'Australia/Sydney', 'Africa/Cairo'];
    // Half set everything at start-up, half with SET: both are the client's own.
    const cs = await Promise.all(
      zones.map((tz, i) =>
        i % 2 === 0
          ? connect(alice, { application_name: `app${i}`, options: `-c TimeZone=${tz} -c app.x=x${i} -c search_path="${alice.name}/${i % 4 === 0 ? 'one' : 'two'}"` })
          : connect(),
      ),
    );
    for (const [i, c] of cs.entries()) {
      if (i % 2 === 0) continue;
      await c.query(`SET TIME ZONE '${zones[i]}'`);
      await c.query(`SET application_name = 'app${i}'`);
      await c.query(`SELECT set_config('app.x', 'x${i}', false)`);
      await c.query(`SET search_path = "${alice.name}/${i % 4 === 1 ? 'one' : 'two'}"`);
    }
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        cs.map(async (c, i) => {
          const repo = (i % 2 === 0 ? i % 4 === 0 : i % 4 === 1) ? 'one' : 'two';
          const { rows } = await c.query("SELECT current_setting('TimeZone') AS tz, current_setting('application_name') AS app, current_setting('app.x') AS x, (SELECT v FROM t) AS v");
          expect(rows[0]).toEqual({ tz: zones[i], app: `app${i}`, x: `x${i}`, v: repo });
          expect(await one(c, 'SHOW TimeZone')).toBe(zones[i]);
          // What the driver was told (ParameterStatus) is the client's own too.
          expect(told.get(c)!.get('application_name')).toBe(`app${i}`);
          expect(told.get(c)!.get('TimeZone')).toBe(zones[i]);
        }),
      );
    }
    expect((await backends()).length).toBeLessThanOrEqual(2);
    expect(await metric('repobase_wire_setting_replays_total')).toBeGreaterThan(0);
  });

  it('RESET returns to the start-up value, RESET ALL to all of them', async () => {
    const c = await connect(alice, { options: '-c TimeZone=Asia/Tokyo -c statement_timeout=7s' });
    const other = await connect();
    await c.query("SET TIME ZONE 'Europe/Paris'");
    await c.query('SET statement_timeout = 2000');
    await other.query("SET TIME ZONE 'America/Lima'"); // the other client takes a backend meanwhile
    await c.query('RESET TimeZone');
    expect(await one(c, 'SHOW TimeZone')).toBe('Asia/Tokyo');
    expect(await one(c, 'SHOW statement_timeout')).toBe('2s');
    await c.query('RESET ALL');
    expect(await one(c, 'SHOW statement_timeout')).toBe('7s');
    expect(await one(c, 'SHOW TimeZone')).toBe('Asia/Tokyo');
    expect(await one(other, 'SHOW TimeZone')).toBe('America/Lima');
  });

  it('a SET in a transaction that rolls back is undone, one that commits is kept; SET LOCAL ends with its transaction', async () => {
    const c = await connect();
    const d = await connect();
    await c.query('BEGIN');
    await c.query("SET app.y = 'rolled back'");
    await c.query('ROLLBACK');
    await c.query('BEGIN');
    await c.query("SET app.z = 'kept'");
    await c.query("SET LOCAL app.w = 'local'");
    await c.query('COMMIT');
    // Meanwhile another client runs on the backends, with settings of its own.
    await d.query("SET app.y = 'd'");
    await d.query("SELECT set_config('app.z', 'd', false)");
    for (let i = 0; i < 3; i++) {
      // A SET leaves the name defined, empty, once its transaction rolls back (on the backend that ran it).
      expect(['', null]).toContain(await one(c, "SELECT current_setting('app.y', true)"));
      expect(await one(c, "SELECT current_setting('app.z')")).toBe('kept');
      expect(['', null]).toContain(await one(c, "SELECT current_setting('app.w', true)"));
      expect(await one(d, "SELECT current_setting('app.z')")).toBe('d');
    }
  });

  it('a setting a function of the user changes is found and follows the client, and reaches no other', async () => {
    const c = await connect();
    const d = await connect();
    await c.query(`CREATE FUNCTION "${alice.name}/one".tenant(t text) RETURNS text LANGUAGE sql AS $$ SELECT set_config('app.tenant', t, false) $$`);
    await c.query(`SELECT "${alice.name}/one".tenant('acme')`);
    const busy = await connect();
    await busy.query('BEGIN');
    await busy.query('SELECT 1'); // one backend held: the next statements of c and d share the other
    try {
      for (let i = 0; i < 3; i++) {
        expect(await one(c, "SELECT current_setting('app.tenant', true)")).toBe('acme');
        // The value never reaches d; the name may be defined (empty) on a backend c used, as after a RESET.
        expect(['', null]).toContain(await one(d, "SELECT current_setting('app.tenant', true)"));
      }
    } finally {
      await busy.query('COMMIT');
    }
  });

  it('a backend reset when a pinned client leaves serves the next client with that client\'s own start-up settings', async () => {
    // A user of its own, one client at a time: one backend, handed from one client to the next.
    const bob = await svc.user('bob');
    const b = await connect(bob, { application_name: 'same', options: '-c TimeZone=Asia/Tokyo' });
    const a = await connect(bob);
    await a.query("SET TIME ZONE 'Asia/Tokyo'");
    await a.query("SET application_name = 'same'");
    await a.query('CREATE TEMP TABLE pin (x int)');
    await a.end(); // pinned: its backend is reset (DISCARD ALL), back at the server's settings
    await expect.poll(async () => (await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'idle' AND query = 'DISCARD ALL'", [bob.name])).rows[0].n).toBe(1);
    const { rows } = await b.query("SELECT current_setting('TimeZone') AS tz, current_setting('application_name') AS app");
    expect(rows[0]).toEqual({ tz: 'Asia/Tokyo', app: 'same' });
    expect(await backends(bob)).toHaveLength(1);
  });
});

describe('the order of a client\'s messages', () => {
  it('is kept while its statement is decided and then a backend is awaited', async () => {
    const carol = await svc.user('carol');
    const [h1, h2, c] = await Promise.all([connect(carol), connect(carol), connect(carol)]);
    for (const h of [h1, h2]) {
      await h.query('BEGIN');
      await h.query('SELECT 1'); // both of carol's backends held
    }
    // A sharing change drops the rights the policy decides with: c's Parse is decided once they are
    // loaded again, while its Bind, Execute and Sync wait; then it waits for a backend.
    await svc.control.createRepo({ owner: carol.name, repo: 'more' });
    const named = c.query({ name: 'n', text: 'SELECT $1::int + 1 AS n', values: [41] });
    const plain = c.query('SELECT 7 AS m');
    await new Promise((r) => setTimeout(r, 200));
    for (const h of [h1, h2]) await h.query('COMMIT');
    expect((await named).rows).toEqual([{ n: 42 }]);
    expect((await plain).rows).toEqual([{ m: 7 }]);
    expect((await c.query({ name: 'n', values: [1] } as pg.QueryConfig)).rows).toEqual([{ n: 2 }]);
    expect((await backends(carol)).length).toBeLessThanOrEqual(2);
  });
});

describe('prepared statements follow each client', () => {
  it('node-postgres named statements of the same and of different texts, interleaved', async () => {
    const cs = await Promise.all([0, 1, 2, 3, 4].map(() => connect()));
    // Two backends to move between, whatever the pool's growth makes of the rounds' timing: two
    // clients hold one each at once first.
    for (const c of cs.slice(0, 2)) await c.query('BEGIN; SELECT 1');
    for (const c of cs.slice(0, 2)) await c.query('COMMIT');
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        cs.map(async (c, i) => {
          // The same name, different texts: each client gets its own.
          const mine = await c.query({ name: 'q', text: `SELECT $1::int + ${i} AS n`, values: [round] });
          expect(mine.rows).toEqual([{ n: round + i }]);
          // The same text under different names: shared upstream, each client's name works.
          const shared = await c.query({ name: `shared${i}`, text: 'SELECT $1::text AS s', values: [`c${i}`] });
          expect(shared.rows).toEqual([{ s: `c${i}` }]);
        }),
      );
    }
    expect((await backends()).length).toBeLessThanOrEqual(2);
    // One move for certain (on a loaded machine the rounds may keep every client where it was):
    // x's statement is prepared on its backend; y and z hold both backends in transactions, and
    // the one on x's backend keeps it while x runs the statement again, on the other backend,
    // where it is prepared again, unseen.
    const [x, y, z] = cs as [pg.Client, pg.Client, pg.Client];
    const reprepares = await metric('repobase_wire_statement_reprepares_total');
    expect((await x.query({ name: 'moved', text: 'SELECT 7 AS n' })).rows).toEqual([{ n: 7 }]);
    const xs = await backendOf(x, admin);
    for (const c of [y, z]) await c.query('BEGIN');
    const [yb, zb] = [await backendOf(y, admin), await backendOf(z, admin)];
    const [keeper, other] = yb === xs ? [y, z] : [z, y];
    expect([yb, zb]).toContain(xs);
    await other.query('COMMIT');
    expect((await x.query({ name: 'moved', text: 'SELECT 7 AS n' })).rows).toEqual([{ n: 7 }]);
    await keeper.query('COMMIT');
    expect(await metric('repobase_wire_statement_reprepares_total')).toBeGreaterThan(reprepares);
  });

  it('postgres.js (prepared statements on), interleaved clients', async () => {
    const sqls = [0, 1, 2, 3].map(() => postgres({ ...svc.pgOptions(alice.name, alice.key), max: 1, prepare: true, onnotice: () => undefined }));
    try {
      for (let round = 0; round < 3; round++) {
        await Promise.all(
          sqls.map(async (sql, i) => {
            const rows = await sql`SELECT ${i}::int * ${round}::int AS n, current_setting('application_name') AS app`;
            expect(rows[0]).toMatchObject({ n: i * round });
          }),
        );
      }
    } finally {
      await Promise.all(sqls.map((s) => s.end()));
    }
  });

  it('SQL PREPARE / EXECUTE / DEALLOCATE, and a name the client never prepared does not exist for it', async () => {
    const c = await connect();
    const d = await connect();
    await c.query('PREPARE p(int) AS SELECT $1 * 10 AS n');
    await d.query('PREPARE p(int) AS SELECT $1 * 100 AS n');
    const holder = await connect();
    try {
      for (let i = 1; i <= 3; i++) {
        // One backend busy part of the time: the two clients move between backends.
        if (i === 2) {
          await holder.query('BEGIN');
          await holder.query('SELECT 1');
        }
        expect(await one(c, `EXECUTE p(${i})`)).toBe(i * 10);
        expect(await one(d, `EXECUTE p(${i})`)).toBe(i * 100);
      }
    } finally {
      await holder.query('COMMIT');
    }
    await expect(c.query('PREPARE p(int) AS SELECT 1')).rejects.toMatchObject({ code: '42P05' });
    await c.query('DEALLOCATE p');
    await expect(c.query('EXECUTE p(1)')).rejects.toMatchObject({ code: '26000' });
    expect(await one(d, 'EXECUTE p(2)')).toBe(200);
    const e = await connect();
    await expect(e.query('EXECUTE p(1)')).rejects.toMatchObject({ code: '26000' });
    await d.query('DEALLOCATE ALL');
    await expect(d.query('EXECUTE p(1)')).rejects.toMatchObject({ code: '26000' });
  });

  it("a backend left holding more than 500 of a client's statements is reset (DISCARD ALL) when the client leaves; one with a few is kept as it is", async () => {
    const lastQuery = async (pid: number) => (await admin.query<{ query: string }>('SELECT query FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]?.query;
    const fill = async (statements: number) => {
      const c = await connect();
      for (let i = 0; i < statements; i++) await c.query({ name: `many${i}`, text: `SELECT ${i} + 1000000 AS n` });
      const pid = await backendOf(c, admin);
      await c.end();
      return pid;
    };
    const few = await fill(3);
    await new Promise((r) => setTimeout(r, 300));
    expect(await lastQuery(few)).not.toBe('DISCARD ALL');
    const many = await fill(501);
    await expect.poll(() => lastQuery(many), { timeout: 5_000 }).toBe('DISCARD ALL');
  });
});

describe("the client's process id", () => {
  it('pg_backend_pid() is the id of its BackendKeyData, whichever backend serves it, in simple and extended queries', async () => {
    const cs = await Promise.all([0, 1, 2, 3, 4].map(() => connect()));
    const pids = cs.map((c) => (c as unknown as { processID: number }).processID);
    expect(new Set(pids).size).toBe(5);
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        cs.map(async (c, i) => {
          expect(await one(c, 'SELECT pg_backend_pid()')).toBe(pids[i]);
          expect(await one(c, 'SELECT pg_catalog.pg_backend_pid() + $1::int AS p', [0])).toBe(pids[i]);
          expect(await one(c, { name: 'pid', text: 'SELECT pg_backend_pid() AS p' } as unknown as string)).toBe(pids[i]);
          await c.query('BEGIN');
          // The catalogs that name backends by process id name the client's own by its id.
          expect(await one(c, 'SELECT count(*)::int FROM pg_stat_activity WHERE pid = pg_backend_pid()')).toBe(1);
          expect(await one(c, "SELECT count(*)::int FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'virtualxid'")).toBe(1);
          expect(await one(c, 'SELECT pg_backend_pid()')).toBe(pids[i]);
          await c.query('COMMIT');
        }),
      );
    }
    // The clients shared two backends, whose own ids they never saw.
    const real = await backends();
    expect(real.length).toBeLessThanOrEqual(2);
    for (const pid of real) expect(pids).not.toContain(pid);
  });

  it('pg_terminate_backend(pg_backend_pid()) ends its session with 57P01, as on a backend of its own; others go on', async () => {
    const c = await connect();
    const other = await connect();
    await expect(c.query('SELECT pg_terminate_backend(pg_backend_pid())')).rejects.toMatchObject({ code: '57P01' });
    expect(await one(other, 'SELECT 1')).toBe(1);
  });

  it('a notification carries the id of the client that sent it, whichever backend it used', async () => {
    const listener = await connect();
    const pidOf = (c: pg.Client) => (c as unknown as { processID: number }).processID;
    const heard: { payload: string; pid: number }[] = [];
    listener.on('notification', (n) => heard.push({ payload: n.payload ?? '', pid: n.processId }));
    await listener.query('LISTEN pids');
    const others = await Promise.all([0, 1, 2].map(() => connect()));
    for (let round = 0; round < 2; round++) {
      await Promise.all(others.map((o, i) => (i === 1 ? o.query(`SELECT pg_notify('pids', 'other${i}.${round}')`) : o.query(`NOTIFY pids, 'other${i}.${round}'`))));
    }
    await others[2]!.query('BEGIN');
    await others[2]!.query("NOTIFY pids, 'in a transaction'");
    await others[2]!.query('COMMIT');
    await listener.query("NOTIFY pids, 'mine'");
    await expect.poll(() => heard.length, { timeout: 5_000 }).toBe(8);
    expect(heard.every((h) => /^(other\d\.\d|in a transaction|mine)$/.test(h.payload))).toBe(true); // no announcement of the proxy's reached it
    expect(heard.find((h) => h.payload === 'mine')?.pid).toBe(pidOf(listener));
    for (const [i, o] of others.entries()) {
      for (const round of [0, 1]) expect(heard.find((h) => h.payload === `other${i}.${round}`)?.pid).toBe(pidOf(o));
    }
    expect(heard.find((h) => h.payload === 'in a transaction')?.pid).toBe(pidOf(others[2]!));
    // A notification no statement of the client's shows (a trigger's) is its backend's, never that of a client it served before.
    const quiet = await connect();
    await quiet.query(`CREATE TABLE "${alice.name}/one".pings (v text)`);
    await quiet.query(`CREATE FUNCTION "${alice.name}/one".ping() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('${alice.name}/pids', 'by a trigger'); RETURN NEW; END $$`);
    await quiet.query(`CREATE TRIGGER ping AFTER INSERT ON "${alice.name}/one".pings FOR EACH ROW EXECUTE FUNCTION "${alice.name}/one".ping()`);
    await Promise.all(others.map((o) => o.query(`INSERT INTO "${alice.name}/one".pings VALUES ('x')`)));
    await expect.poll(() => heard.filter((h) => h.payload === 'by a trigger').length, { timeout: 5_000 }).toBe(3);
    const clientPids = [...others, quiet, listener].map(pidOf);
    for (const h of heard.filter((x) => x.payload === 'by a trigger')) expect(clientPids).not.toContain(h.pid);
    expect(await one(listener, 'SELECT pg_backend_pid()')).toBe(pidOf(listener));
    await listener.query('UNLISTEN pids'); // the check finds no channel of the client's left
    await expect.poll(() => pinned('listen')).toBe(0);
  });
});

describe('state that pins a client to its backend', () => {
  it('a temporary table keeps its backend until DISCARD TEMP; meanwhile others use the other backend', async () => {
    const c = await connect();
    await c.query('CREATE TEMP TABLE scratch AS SELECT 1 AS a');
    const pid = await one<number>(c, 'SELECT pg_backend_pid()');
    const others = await Promise.all([0, 1, 2].map(() => connect()));
    for (let i = 0; i < 3; i++) {
      await Promise.all(others.map((o) => o.query('SELECT 1')));
      expect(await one(c, 'SELECT count(*)::int FROM pg_temp.scratch')).toBe(1);
      expect(await one(c, 'SELECT pg_backend_pid()')).toBe(pid);
    }
    await expect.poll(() => pinned('temp')).toBe(1);
    // Another client of the user never sees it.
    await expect(others[0]!.query('SELECT * FROM pg_temp.scratch')).rejects.toMatchObject({ code: '42P01' });
    await c.query('DISCARD TEMP');
    await expect.poll(() => pinned('temp')).toBe(0);
    await Promise.all(others.map((o) => o.end()));
  });

  it('a session advisory lock keeps its backend until unlocked; another client cannot take it meanwhile', async () => {
    const c = await connect();
    const d = await connect();
    await c.query('SELECT pg_advisory_lock(42)');
    expect(await one(d, 'SELECT pg_try_advisory_lock(42)')).toBe(false); // took none: d is not pinned
    await expect.poll(() => pinned('advisory_lock')).toBe(1);
    await c.query('SELECT pg_advisory_unlock(42)'); // the backend is asked: none left
    await expect.poll(() => pinned('advisory_lock')).toBe(0);
    expect(await one(d, 'SELECT pg_try_advisory_lock(42)')).toBe(true);
    await expect.poll(() => pinned('advisory_lock')).toBe(1);
    await d.query('SELECT pg_advisory_unlock_all()');
    await expect.poll(() => pinned('advisory_lock')).toBe(0);
  });

  it('LISTEN keeps its backend and hears NOTIFY from the other clients, until UNLISTEN *', async () => {
    const listener = await connect();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(`${n.channel}:${n.payload ?? ''}`));
    await listener.query('LISTEN jobs');
    const senders = await Promise.all([0, 1, 2].map(() => connect()));
    await Promise.all(senders.map((s, i) => s.query(`NOTIFY jobs, 's${i}'`)));
    await expect.poll(() => heard.sort(), { timeout: 5_000 }).toEqual(['jobs:s0', 'jobs:s1', 'jobs:s2']);
    await expect.poll(() => pinned('listen')).toBe(1);
    await listener.query('UNLISTEN *');
    await expect.poll(() => pinned('listen')).toBe(0);
    await Promise.all(senders.map((o) => o.end()));
  });

  it('a cursor WITH HOLD keeps its backend until CLOSE', async () => {
    const c = await connect();
    await c.query('DECLARE held CURSOR WITH HOLD FOR SELECT g FROM generate_series(1, 3) g');
    await Promise.all([0, 1].map(async () => (await connect()).query('SELECT 1')));
    expect(await one(c, 'FETCH 1 FROM held')).toBe(1);
    expect(await one(c, 'FETCH 1 FROM held')).toBe(2);
    await expect.poll(() => pinned('cursor')).toBe(1);
    await c.query('CLOSE held');
    await expect.poll(() => pinned('cursor')).toBe(0);
  });
});

/** A series of the metrics, as a number. */
async function metric(series: string): Promise<number> {
  const text = await (await fetch(svc.metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** Clients pinned for `reason`, from the metrics (polled: the check that may unpin runs after the statement's answer). */
async function pinned(reason: string): Promise<number> {
  const text = await (await fetch(svc.metricsUrl)).text();
  const m = new RegExp(`^repobase_wire_pinned_clients\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text);
  return Number(m?.[1] ?? NaN);
}
