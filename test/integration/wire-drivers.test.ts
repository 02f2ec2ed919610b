/**
 * The wire front end with real drivers: node-postgres and postgres.js, over TLS and not.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, Writable } from 'node:stream';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
const clients: pg.Client[] = [];

async function connect(opts: pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(opts);
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'sales' });
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await svc.stop();
});

describe('node-postgres through repobase', () => {
  it('logs in with SCRAM using an API key, as the user\'s own role', async () => {
    const db = await connect(svc.pgOptions(alice.name, alice.key));
    const res = await db.query('SELECT current_user AS u, 1 + 1 AS two');
    expect(res.rows).toEqual([{ u: alice.name, two: 2 }]);
  });

  it('refuses a wrong key, another user\'s key and an unknown user with 28P01', async () => {
    const bob = await svc.user('bob');
    const attempts = [
      svc.pgOptions(alice.name, alice.key.slice(0, -2) + 'xx'),
      svc.pgOptions(alice.name, bob.key),
      svc.pgOptions('nobody_here', alice.key),
    ];
    for (const opts of attempts) {
      const client = new pg.Client(opts);
      await expect(client.connect()).rejects.toMatchObject({ code: '28P01', message: `password authentication failed for user "${opts.user}"` });
    }
  });

  it('speaks TLS (sslmode=require) and verifies against the generated certificate (verify-full)', async () => {
    const ca = await readFile(join(svc.config.dataDir, 'tls-cert.pem'), 'utf8');
    const db = await connect({ ...svc.pgOptions(alice.name, alice.key), ssl: { ca, servername: 'localhost', rejectUnauthorized: true } });
    const res = await db.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
    expect(res.rows).toHaveLength(1); // the upstream hop is local; the client hop is TLS
    expect((db as unknown as { connection: { stream: { encrypted?: boolean } } }).connection.stream.encrypted).toBe(true);
  });

  it('selects the repo with database "<user>/<repo>"', async () => {
    const db = await connect(svc.pgOptions(alice.name, alice.key, `${alice.name}/sales`));
    await db.query('CREATE TABLE "Orders 2024" (id int, note text)');
    await db.query('INSERT INTO "Orders 2024" VALUES (1, \'one\')');
    const res = await db.query(`SELECT note FROM "${alice.name}/sales"."Orders 2024"`);
    expect(res.rows).toEqual([{ note: 'one' }]);
    const unknown = new pg.Client(svc.pgOptions(alice.name, alice.key, 'nope'));
    await expect(unknown.connect()).rejects.toMatchObject({ code: '3D000' });
  });

  it('parameters, named prepared statements, NULL, transactions with rollback', async () => {
    const db = await connect(svc.pgOptions(alice.name, alice.key, `${alice.name}/sales`));
    await db.query('CREATE TABLE params (id int, v text)');
    await db.query({ name: 'ins', text: 'INSERT INTO params VALUES ($1, $2)', values: [1, 'a'] });
    await db.query({ name: 'ins', text: 'INSERT INTO params VALUES ($1, $2)', values: [2, null] });
    const res = await db.query('SELECT id, v, v IS NULL AS isnull FROM params WHERE id = ANY($1) ORDER BY id', [[1, 2]]);
    expect(res.rows).toEqual([
      { id: 1, v: 'a', isnull: false },
      { id: 2, v: null, isnull: true },
    ]);
    await db.query('BEGIN');
    await db.query('INSERT INTO params VALUES (3, $1)', ['rolled back']);
    await db.query('ROLLBACK');
    expect((await db.query('SELECT count(*)::int AS n FROM params')).rows[0]).toEqual({ n: 2 });
  });

  it('a 10 MB value round-trips', async () => {
    const db = await connect(svc.pgOptions(alice.name, alice.key));
    const big = 'x'.repeat(10 * 1024 * 1024);
    const res = await db.query('SELECT length($1::text) AS n, md5($1::text) AS h', [big]);
    expect(res.rows[0].n).toBe(big.length);
    const back = await db.query('SELECT repeat($1::text, $2) AS v', ['y', 10 * 1024 * 1024]);
    expect(back.rows[0].v.length).toBe(10 * 1024 * 1024);
  });

  it('LISTEN/NOTIFY between two connections, on a channel in the user\'s namespace', async () => {
    const a = await connect(svc.pgOptions(alice.name, alice.key));
    const b = await connect(svc.pgOptions(alice.name, alice.key));
    const channel = `"${alice.name}/events"`;
    await a.query(`LISTEN ${channel}`);
    const got = new Promise<string | undefined>((resolve) => a.on('notification', (n) => resolve(n.payload)));
    await b.query(`NOTIFY ${channel}, 'hello'`);
    expect(await got).toBe('hello');
    // Plain names are the user's own too (wire-notify.test.ts); the service's are refused.
    await expect(a.query('LISTEN repobase_schema')).rejects.toMatchObject({ code: '42501' });
  });

  it('COPY FROM STDIN and TO STDOUT', async () => {
    const db = await connect(svc.pgOptions(alice.name, alice.key, `${alice.name}/sales`));
    await db.query('CREATE TABLE copied (id int, name text)');
    const rows = Array.from({ length: 5000 }, (_, i) => `${i}\tname ${i}\n`).join('');
    await pipeline(Readable.from([rows]), db.query(copyFrom('COPY copied FROM STDIN')));
    expect((await db.query('SELECT count(*)::int AS n, max(id) AS m FROM copied')).rows[0]).toEqual({ n: 5000, m: 4999 });
    let out = '';
    await pipeline(
      db.query(copyTo('COPY (SELECT * FROM copied ORDER BY id LIMIT 3) TO STDOUT')),
      new Writable({
        write(chunk: Buffer, _e, cb) {
          out += chunk.toString();
          cb();
        },
      }),
    );
    expect(out).toBe('0\tname 0\n1\tname 1\n2\tname 2\n');
  });
});

describe('postgres.js through repobase', () => {
  it('pipelined queries, prepared statements and sql.begin', async () => {
    const sql = postgres({ ...svc.pgOptions(alice.name, alice.key, `${alice.name}/sales`), max: 1, onnotice: () => undefined });
    try {
      await sql`CREATE TABLE pj (id int primary key, v text)`;
      const results = await Promise.all([1, 2, 3, 4, 5].map((i) => sql`INSERT INTO pj VALUES (${i}, ${'v' + i}) RETURNING id`));
      expect(results.map((r) => r[0]?.id)).toEqual([1, 2, 3, 4, 5]);
      for (let i = 0; i < 3; i++) {
        const r = await sql`SELECT v FROM pj WHERE id = ${i + 1}`;
        expect(r[0]?.v).toBe(`v${i + 1}`);
      }
      await expect(
        sql.begin(async (tx) => {
          await tx`INSERT INTO pj VALUES (6, 'in tx')`;
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      const committed = await sql.begin(async (tx) => {
        await tx`INSERT INTO pj VALUES (7, 'kept')`;
        return tx`SELECT count(*)::int AS n FROM pj`;
      });
      expect(committed[0]?.n).toBe(6);
    } finally {
      await sql.end();
    }
  });

  it('cancels a running statement (CancelRequest routed to the right backend)', async () => {
    const sql = postgres({ ...svc.pgOptions(alice.name, alice.key), max: 1 });
    const other = postgres({ ...svc.pgOptions(alice.name, alice.key), max: 1 });
    try {
      // Connected first: postgres.js reads pg_type when it connects (now through the filtered
      // catalog view), and a cancel that lands on that query instead of the sleep stalls it.
      await Promise.all([sql`SELECT 1`, other`SELECT 1`]);
      const started = Date.now();
      const sleeping = sql`SELECT pg_sleep(30)`;
      const bystander = other`SELECT pg_sleep(0.5), 'still here' AS v`;
      setTimeout(() => void sleeping.cancel(), 200);
      await expect(sleeping).rejects.toMatchObject({ code: '57014' });
      expect(Date.now() - started).toBeLessThan(1500);
      expect((await bystander)[0]?.v).toBe('still here');
      expect((await sql`SELECT 1 AS one`)[0]?.one).toBe(1);
    } finally {
      await sql.end();
      await other.end();
    }
  });
});
