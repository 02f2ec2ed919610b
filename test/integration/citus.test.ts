/**
 * repobase on a Citus cluster (a coordinator and two workers of PostgreSQL 15 with Citus, started
 * for this file; see bench/lib/citus.ts): start-up, repos as distributed schemas by every route,
 * both front ends and uploads, a user's repos placed on one node from their first table on so
 * that joins among them run at once (and moved there when that did not hold),
 * the join Citus cannot run refused with a clear error, `citus.*` out of users' reach, and an
 * online repo move with a writer running. If Citus cannot start here, the file fails with why.
 */
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCitus, type CitusCluster } from '../../bench/lib/citus.js';
import { run } from '../../bench/lib/proc.js';
import { moveRepo, nodeName, parseNode, repoNode } from '../../src/upstream/citus.js';
import { plannedNode } from '../../src/upstream/citus-placement.js';
import { runCli } from '../helpers/cli.js';
import { sendCancel } from '../helpers/raw-wire.js';
import { upload } from './ingest-helpers.js';
import { startServiceOn } from '../helpers/faults.js';
import type { TestService } from '../helpers/service.js';

let citus: CitusCluster;
let svc: TestService;
let admin: pg.Client;
let cliEnv: Record<string, string>;

beforeAll(async () => {
  citus = await startCitus({ workers: 2 });
  svc = await startServiceOn(citus.url());
  cliEnv = { REPOBASE_UPSTREAM_URL: citus.url(), REPOBASE_DATA_DIR: svc.config.dataDir, REPOBASE_SECRET: svc.config.secret };
  admin = new pg.Client({ connectionString: citus.url() });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await svc?.stop();
  await citus?.stop();
});

interface RestAnswer {
  status: number;
  body: { data?: unknown[][]; error?: { code: string; message: string; hint: string | null } };
}

async function rest(key: string, sql: string): Promise<RestAnswer> {
  const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query_string: sql }),
  });
  return { status: res.status, body: (await res.json()) as RestAnswer['body'] };
}

async function distributed(schema: string): Promise<boolean> {
  const res = await admin.query('SELECT 1 FROM pg_dist_schema WHERE schemaid = (SELECT oid FROM pg_namespace WHERE nspname = $1)', [schema]);
  return res.rowCount === 1;
}

async function nodeOf(schema: string): Promise<string | undefined> {
  const node = await repoNode(admin, schema);
  return node && nodeName(node);
}

/** Where a repo's tables are, or where its first table will go. */
async function planned(schema: string): Promise<string | undefined> {
  const node = await plannedNode(admin, schema);
  return node && nodeName(node);
}

async function createRepoViaRest(key: string, name: string): Promise<Response> {
  return fetch(`${svc.httpUrl}/api/v1beta/repos/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
}

describe('start-up on a Citus coordinator', () => {
  it('migrates with the control plane local to the coordinator and joins of co-located repos turned on', async () => {
    expect(await distributed('_repobase')).toBe(false);
    const local = await admin.query("SELECT count(*)::int AS n FROM citus_tables WHERE table_name::text LIKE '\\_repobase.%'");
    expect(local.rows[0].n).toBe(0);
    const setting = await admin.query("SELECT unnest(setconfig) AS s FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND setrole = 0");
    expect(setting.rows.map((r) => r.s)).toContain('citus.enable_non_colocated_router_query_pushdown=on');
    expect((await fetch(`${svc.httpUrl}/healthz`)).status).toBe(200);
  });
});

describe('repos are distributed schemas', () => {
  it("whether created by the REST API, CREATE SCHEMA over the wire or the admin CLI, each placed on its owner's node", async () => {
    const u = await svc.user('routes');
    expect((await createRepoViaRest(u.key, 'by_api')).status).toBe(201);
    const wire = new pg.Client(svc.pgOptions(u.name, u.key));
    await wire.connect();
    await wire.query(`CREATE SCHEMA "${u.name}/by_wire"`);
    await wire.end();
    const cli = await runCli(['repo', 'create', `${u.name}/by_cli`], cliEnv);
    expect(cli.stderr).toBe('');
    for (const repo of ['by_api', 'by_wire', 'by_cli']) expect(await distributed(`${u.name}/${repo}`)).toBe(true);
    // Placed with the owner's first repo before any of them has a table (see "a user's repos live together").
    const home = await planned(`${u.name}/by_api`);
    expect(home).toBeDefined();
    for (const repo of ['by_wire', 'by_cli']) expect(await planned(`${u.name}/${repo}`)).toBe(home);
  });
});

describe('both front ends', () => {
  it('REST runs DDL Citus propagates, the seed type change included, and keeps an upstream XX000 message', async () => {
    const u = await svc.user('restddl');
    await svc.control.createRepo({ owner: u.name, repo: 'data' });
    const t = `"${u.name}/data".t`;
    expect((await rest(u.key, `CREATE TABLE ${t} (id int PRIMARY KEY, v text)`)).status).toBe(200);
    expect((await rest(u.key, `INSERT INTO ${t} VALUES (1, '12'), (2, '7')`)).status).toBe(200);
    const changed = await rest(u.key, `ALTER TABLE ${t} ALTER COLUMN v TYPE bigint`);
    expect(changed.body.error).toBeUndefined();
    expect((await rest(u.key, `SELECT sum(v)::text FROM ${t}`)).body.data).toEqual([['19']]);
    expect((await rest(u.key, `CREATE INDEX ON ${t} (v)`)).status).toBe(200);
    expect((await rest(u.key, `ALTER TABLE ${t} ADD COLUMN w text DEFAULT 'x'`)).status).toBe(200);
  });

  it('drivers over the wire: pg with the extended protocol, postgres.js, COPY', async () => {
    const u = await svc.user('drivers');
    await svc.control.createRepo({ owner: u.name, repo: 'w' });
    const c = new pg.Client(svc.pgOptions(u.name, u.key));
    await c.connect();
    try {
      await c.query(`CREATE TABLE "${u.name}/w".items (id serial PRIMARY KEY, name text)`);
      await c.query(`INSERT INTO "${u.name}/w".items (name) VALUES ($1), ($2)`, ['a', 'b']);
      expect((await c.query(`SELECT name FROM "${u.name}/w".items WHERE id = $1`, [2])).rows).toEqual([{ name: 'b' }]);
    } finally {
      await c.end();
    }
    const sql = postgres(svc.pgUrl(u.name, u.key), { max: 1, onnotice: () => undefined });
    try {
      const rows = await sql`SELECT count(*)::int AS n FROM ${sql(`${u.name}/w`)}.items`;
      expect(rows[0]!.n).toBe(2);
    } finally {
      await sql.end();
    }
  });

  it('uploads land in a distributed schema', async () => {
    const u = await svc.user('upload');
    await svc.control.createRepo({ owner: u.name, repo: 'up' });
    const answer = await upload(svc, u.key, { repo: `${u.name}/up`, table_name: 'people' }, { name: 'people.csv', data: 'name,age\nann,31\nbo,42\n' });
    expect(answer.body.error ?? null).toBeNull();
    expect(answer.status).toBeLessThan(300);
    const placed = await admin.query("SELECT citus_table_type FROM citus_tables WHERE table_name = $1::regclass", [`"${u.name}/up".people`]);
    expect(placed.rows).toEqual([{ citus_table_type: 'schema' }]);
    expect((await rest(u.key, `SELECT sum(age)::int FROM "${u.name}/up".people`)).body.data).toEqual([[73]]);
  });

  it('psql \\d and pgbench through repobase', async () => {
    const u = await svc.user('bench');
    await svc.control.createRepo({ owner: u.name, repo: 'pgb' });
    const url = svc.pgUrl(u.name, u.key, `${u.name}/pgb`, 'sslmode=disable');
    const env = { ...process.env, PGCONNECT_TIMEOUT: '10' };
    const init = await run('pgbench', ['-i', '-s', '1', '-q', url], { env });
    expect(init.code, init.stderr).toBe(0);
    const bench = await run('pgbench', ['-c', '4', '-j', '2', '-t', '50', url], { env });
    expect(bench.code, bench.stderr).toBe(0);
    expect(bench.stdout).toMatch(/number of failed transactions: 0 /);
    const d = await run('psql', [url, '-X', '-c', '\\d pgbench_accounts'], { env });
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toContain('abalance');
  });
});

describe('isolation and sharing reach the workers', () => {
  it("another user's private repo stays closed; a collaborator reads and writes as granted; public repos are readable", async () => {
    const owner = await svc.user('iso_owner');
    const other = await svc.user('iso_other');
    await svc.control.createRepo({ owner: owner.name, repo: 'priv' });
    await svc.control.createRepo({ owner: owner.name, repo: 'pub' }, { isPrivate: false });
    for (const repo of ['priv', 'pub']) {
      expect((await rest(owner.key, `CREATE TABLE "${owner.name}/${repo}".t (id int PRIMARY KEY)`)).status).toBe(200);
      expect((await rest(owner.key, `INSERT INTO "${owner.name}/${repo}".t VALUES (1)`)).status).toBe(200);
    }
    const c = new pg.Client(svc.pgOptions(other.name, other.key));
    await c.connect();
    try {
      await expect(c.query(`SELECT * FROM "${owner.name}/priv".t`)).rejects.toMatchObject({ code: '42501' });
      expect((await c.query(`SELECT count(*)::int AS n FROM "${owner.name}/pub".t`)).rows).toEqual([{ n: 1 }]);
      await expect(c.query(`INSERT INTO "${owner.name}/pub".t VALUES (2)`)).rejects.toMatchObject({ code: '42501' });
      await svc.control.setCollaborator({ owner: owner.name, repo: 'priv' }, other.name, 'write');
      await expect.poll(async () => (await c.query(`SELECT count(*)::int AS n FROM "${owner.name}/priv".t`).catch(() => ({ rows: [] }))).rows, { timeout: 5_000 }).toEqual([{ n: 1 }]);
      await c.query(`INSERT INTO "${owner.name}/priv".t VALUES (2)`);
      expect((await rest(owner.key, `SELECT count(*)::int FROM "${owner.name}/priv".t`)).body.data).toEqual([[2]]);
    } finally {
      await c.end();
    }
  });

  it('a cancel reaches a statement running on a worker', async () => {
    const u = await svc.user('canceller');
    await svc.control.createRepo({ owner: u.name, repo: 'slow' });
    expect((await rest(u.key, `CREATE TABLE "${u.name}/slow".t (id int PRIMARY KEY)`)).status).toBe(200);
    const c = new pg.Client(svc.pgOptions(u.name, u.key));
    await c.connect();
    try {
      const started = Date.now();
      const sleeping = c.query(`SELECT pg_sleep(30) FROM "${u.name}/slow".t UNION ALL SELECT pg_sleep(30)`).then(
        () => 'finished',
        (err: { code?: string }) => err.code,
      );
      await new Promise((r) => setTimeout(r, 500));
      const key = c as unknown as { processID: number; secretKey: number };
      await sendCancel(svc.pgPort, key.processID, key.secretKey);
      expect(await sleeping).toBe('57014');
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await c.end();
    }
  });
});

describe("a user's repos live together", () => {
  /**
   * 20 times: two new repos of one user, a table with a row in each, and a join of them at once.
   * Returns each join's rows, or its error. The first pair is the user's first repos.
   */
  async function twentyNewPairsJoined(via: 'rest' | 'wire'): Promise<unknown[]> {
    const u = await svc.user(`pairs_${via}`);
    const c = new pg.Client(svc.pgOptions(u.name, u.key));
    if (via === 'wire') await c.connect();
    const answers: unknown[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const [sales, hr] = [`"${u.name}/sales${i}"`, `"${u.name}/hr${i}"`];
        const statements = [
          `CREATE TABLE ${sales}."Orders 2024" (id int PRIMARY KEY, amount int)`,
          `CREATE TABLE ${hr}.people (id int PRIMARY KEY, name text)`,
          `INSERT INTO ${sales}."Orders 2024" VALUES (1, ${i})`,
          `INSERT INTO ${hr}.people VALUES (1, 'ann')`,
        ];
        const join = `SELECT p.name, o.amount FROM ${hr}.people p JOIN ${sales}."Orders 2024" o USING (id)`;
        if (via === 'rest') {
          for (const name of [`sales${i}`, `hr${i}`]) expect((await createRepoViaRest(u.key, name)).status).toBe(201);
          for (const sql of statements) expect((await rest(u.key, sql)).body.error).toBeUndefined();
          const answer = await rest(u.key, join);
          answers.push(answer.body.error?.message ?? answer.body.data);
        } else {
          for (const sql of [`CREATE SCHEMA ${sales}`, `CREATE SCHEMA ${hr}`, ...statements]) await c.query(sql);
          answers.push(
            await c.query({ text: join, rowMode: 'array' }).then(
              (res) => res.rows,
              (err: Error) => err.message,
            ),
          );
        }
      }
    } finally {
      if (via === 'wire') await c.end();
    }
    return answers;
  }

  it('two new repos join right after their first tables, 20 times in a row over REST and over the wire at once: never refused', async () => {
    // Both front ends create repos at the same time: each creation's placement must hold against the other's.
    const [viaRest, viaWire] = await Promise.all([twentyNewPairsJoined('rest'), twentyNewPairsJoined('wire')]);
    const expected = Array.from({ length: 20 }, (_, i) => [['ann', i]]);
    expect(viaRest).toEqual(expected);
    expect(viaWire).toEqual(expected);
  });

  it('a first table by upload, by CREATE TABLE … AS or in a transaction over the wire joins the owner\'s other repos at once', async () => {
    const u = await svc.user('routes_placed');
    for (const repo of ['up', 'ctas']) expect((await createRepoViaRest(u.key, repo)).status).toBe(201);
    const c = new pg.Client(svc.pgOptions(u.name, u.key));
    await c.connect();
    try {
      await c.query(`CREATE SCHEMA "${u.name}/tx"`);
      // Before any table: every repo's first table will go to the node of the owner's first repo.
      const home = await planned(`${u.name}/up`);
      for (const repo of ['ctas', 'tx']) expect(await planned(`${u.name}/${repo}`)).toBe(home);

      const up = await upload(svc, u.key, { repo: `${u.name}/up`, table_name: 'people' }, { name: 'people.csv', data: 'id,name\n1,ann\n2,bo\n' });
      expect(up.body.error ?? null).toBeNull();
      expect((await rest(u.key, `CREATE TABLE "${u.name}/ctas".orders AS SELECT 2 AS id, 40 AS amount`)).body.error).toBeUndefined();
      const join2 = `SELECT p.name, o.amount FROM "${u.name}/up".people p JOIN "${u.name}/ctas".orders o USING (id)`;
      expect((await rest(u.key, join2)).body).toMatchObject({ data: [['bo', 40]] });

      await c.query('BEGIN');
      await c.query(`CREATE TABLE "${u.name}/tx".notes (id int PRIMARY KEY, note text)`);
      await c.query(`INSERT INTO "${u.name}/tx".notes VALUES (2, 'late')`);
      const join3 = `SELECT p.name, o.amount, n.note FROM "${u.name}/up".people p JOIN "${u.name}/ctas".orders o USING (id) JOIN "${u.name}/tx".notes n USING (id)`;
      expect((await c.query({ text: join3, rowMode: 'array' })).rows).toEqual([['bo', 40, 'late']]);
      await c.query('COMMIT');
      expect((await rest(u.key, join3)).body).toMatchObject({ data: [['bo', 40, 'late']] });
      for (const repo of ['up', 'ctas', 'tx']) expect(await nodeOf(`${u.name}/${repo}`)).toBe(home);
    } finally {
      await c.end();
    }
  });

  it("a repo that ends up elsewhere (its owner's other repo moved meanwhile) is moved to its owner's node after its first table", async () => {
    const u = await svc.user('follower');
    await svc.control.createRepo({ owner: u.name, repo: 'one' });
    expect((await rest(u.key, `CREATE TABLE "${u.name}/one".t (id int PRIMARY KEY, one text)`)).status).toBe(200);
    await svc.control.createRepo({ owner: u.name, repo: 'two' });
    const first = (await nodeOf(`${u.name}/one`))!;
    expect(await planned(`${u.name}/two`)).toBe(first);
    const other = citus.workers.map(nodeName).find((n) => n !== first)!;
    await moveRepo(admin, `${u.name}/one`, parseNode(other));
    expect((await rest(u.key, `CREATE TABLE "${u.name}/two".t (id int PRIMARY KEY, two text)`)).status).toBe(200);
    await expect.poll(() => nodeOf(`${u.name}/two`), { timeout: 20_000, interval: 100 }).toBe(other);
    for (const repo of ['one', 'two']) expect((await rest(u.key, `INSERT INTO "${u.name}/${repo}".t VALUES (1, '${repo}')`)).status).toBe(200);
    const join = `SELECT one, two FROM "${u.name}/one".t JOIN "${u.name}/two".t USING (id)`;
    expect((await rest(u.key, join)).body).toMatchObject({ data: [['one', 'two']] });
  });

  it('a join with a public repo on another node is refused with a clear error naming both repos', async () => {
    const owner = await svc.user('pubowner');
    const reader = await svc.user('reader');
    await svc.control.createRepo({ owner: owner.name, repo: 'open' }, { isPrivate: false });
    await svc.control.createRepo({ owner: reader.name, repo: 'mine' });
    expect((await rest(owner.key, `CREATE TABLE "${owner.name}/open".t (id int PRIMARY KEY, a text)`)).status).toBe(200);
    expect((await rest(reader.key, `CREATE TABLE "${reader.name}/mine".t (id int PRIMARY KEY, b text)`)).status).toBe(200);
    const mine = await nodeOf(`${reader.name}/mine`);
    const other = citus.workers.map(nodeName).find((n) => n !== mine)!;
    if ((await nodeOf(`${owner.name}/open`)) !== other) await moveRepo(admin, `${owner.name}/open`, parseNode(other));
    const join = `SELECT * FROM "${reader.name}/mine".t m JOIN "${owner.name}/open".t o ON o.id = m.id`;
    const refused = await rest(reader.key, join);
    expect(refused.status).toBe(400);
    expect(refused.body.error?.code).toBe('0A000');
    expect(refused.body.error?.message).toBe(`repos "${reader.name}/mine" and "${owner.name}/open" are stored on different nodes of the cluster and cannot be joined`);
    expect(refused.body.error?.hint).toContain('copy what you need into one of your repos');
    const wire = new pg.Client(svc.pgOptions(reader.name, reader.key));
    await wire.connect();
    try {
      await expect(wire.query(join)).rejects.toMatchObject({
        code: '0A000',
        message: `repos "${reader.name}/mine" and "${owner.name}/open" are stored on different nodes of the cluster and cannot be joined`,
      });
      expect((await wire.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    } finally {
      await wire.end();
    }
    // Each alone is fine.
    expect((await rest(reader.key, `SELECT count(*)::int FROM "${owner.name}/open".t`)).status).toBe(200);
  });
});

describe('Citus is the operator\'s', () => {
  it('citus.* settings and administrative functions are refused over the wire, at start-up too', async () => {
    const u = await svc.user('citususer');
    await svc.control.createRepo({ owner: u.name, repo: 'r' });
    const c = new pg.Client(svc.pgOptions(u.name, u.key));
    await c.connect();
    try {
      await expect(c.query('SET citus.enable_ddl_propagation TO off')).rejects.toMatchObject({ code: '42501' });
      await expect(c.query(`SELECT citus_schema_move('"${u.name}/r"'::regnamespace, '127.0.0.1', 1)`)).rejects.toMatchObject({ code: '42501' });
      await expect(c.query("SELECT run_command_on_workers('SELECT 1')")).rejects.toMatchObject({ code: '42501' });
      expect((await c.query('SELECT citus_version() AS v')).rows[0].v).toMatch(/^Citus 13\./);
      await c.query('RESET citus.enable_ddl_propagation');
    } finally {
      await c.end();
    }
    const withOption = new pg.Client({ ...svc.pgOptions(u.name, u.key), options: '-c citus.enable_ddl_propagation=off' });
    withOption.on('error', () => undefined);
    await expect(withOption.connect()).rejects.toMatchObject({ code: '42501' });
  });
});

describe('operator commands', () => {
  it('repobase repo move moves a repo online: a writer sees at most a pause, and no write is lost', async () => {
    const u = await svc.user('mover');
    await svc.control.createRepo({ owner: u.name, repo: 'busy' });
    const schema = `${u.name}/busy`;
    expect((await rest(u.key, `CREATE TABLE "${schema}".log (n int PRIMARY KEY)`)).status).toBe(200);
    await expect.poll(() => nodeOf(schema), { timeout: 20_000, interval: 200 }).toBeDefined();
    const from = (await nodeOf(schema))!;
    const to = citus.workers.map(nodeName).find((n) => n !== from)!;

    const writer = new pg.Client(svc.pgOptions(u.name, u.key));
    await writer.connect();
    let n = 0;
    let stop = false;
    const errors: string[] = [];
    const writing = (async () => {
      while (!stop) {
        try {
          await writer.query(`INSERT INTO "${schema}".log VALUES ($1)`, [n + 1]);
          n++;
        } catch (err: unknown) {
          errors.push(String((err as Error).message));
          if (errors.length > 5) return;
        }
      }
    })();
    await expect.poll(() => n, { timeout: 10_000 }).toBeGreaterThan(20);
    const moved = await runCli(['repo', 'move', schema, '--to', to], cliEnv);
    expect(moved.stderr).toBe('');
    expect(moved.stdout).toBe(`moved ${schema} to ${to}\n`);
    const atMove = n;
    await expect.poll(() => n, { timeout: 10_000 }).toBeGreaterThan(atMove + 20);
    stop = true;
    await writing;
    await writer.end();
    expect(errors).toEqual([]);
    expect(await nodeOf(schema)).toBe(to);
    const missing = await admin.query(`SELECT g FROM generate_series(1, $1::int) g WHERE NOT EXISTS (SELECT FROM "${schema}".log WHERE n = g)`, [n]);
    expect(missing.rows.map((r) => r.g)).toEqual([]);
    expect((await rest(u.key, `SELECT count(*)::int, max(n) FROM "${schema}".log`)).body.data).toEqual([[n, n]]);

    const again = await runCli(['repo', 'move', schema, '--to', to], cliEnv);
    expect(again.stdout).toBe(`${schema} is already on ${to}\n`);
    const unknown = await runCli(['repo', 'move', schema, '--to', '127.0.0.1:1'], cliEnv);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no active worker node 127.0.0.1:1');
  });

  it('repobase nodes lists the coordinator and workers with their repos and sizes', async () => {
    const r = await runCli(['nodes', '--json'], cliEnv);
    expect(r.stderr).toBe('');
    const nodes = JSON.parse(r.stdout) as { host: string; port: number; role: string; repos: number; bytes: number }[];
    expect(nodes.map((x) => `${x.role} ${x.host}:${x.port}`)).toEqual([`coordinator ${nodeName(citus.coordinator)}`, ...citus.workers.map((w) => `worker ${nodeName(w)}`)]);
    const placed = await admin.query('SELECT count(DISTINCT schemaid)::int AS n FROM pg_dist_schema d JOIN citus_shards s ON s.colocation_id = d.colocationid');
    expect(nodes.reduce((sum, x) => sum + x.repos, 0)).toBe(placed.rows[0].n);
    expect(nodes.filter((x) => x.role === 'worker').every((x) => x.repos > 0 && x.bytes > 0)).toBe(true);
    const text = await runCli(['nodes'], cliEnv);
    expect(text.stdout).toMatch(/^NODE +\| ROLE +\| ACTIVE \| REPOS \| SIZE/);
  });
});
