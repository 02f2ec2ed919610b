/**
 * `/repos/…` for their owner: create, read, change, share, delete; and the OpenAPI document
 * generated from the same schemas.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let alice: { name: string; key: string };
let bob: { name: string; key: string };

beforeAll(async () => {
  srv = await startRest();
  alice = await srv.user('alice');
  bob = await srv.user('bob');
});

afterAll(async () => {
  await srv?.stop();
});

interface RepoJson {
  name: string;
  owner: string;
  repo: string;
  is_private: boolean;
  description: string;
  created_at: string;
}

describe('repos of their owner', () => {
  it('POST /repos/ creates a repo (201) with defaults: private, no description', async () => {
    const r = await srv.call(alice.key, 'POST', '/repos/', { name: 'sales' });
    expect(r.status).toBe(201);
    const repo = (await r.json()) as RepoJson;
    expect(repo).toEqual({ name: `${alice.name}/sales`, owner: alice.name, repo: 'sales', is_private: true, description: '', created_at: expect.any(String), permission: 'own' });
    expect(Math.abs(Date.parse(repo.created_at) - Date.now())).toBeLessThan(60_000);
    const full = await srv.call(alice.key, 'POST', '/repos/', { name: `${alice.name}/open.data-1`, is_private: false, description: 'for all' });
    expect(((await full.json()) as RepoJson).is_private).toBe(false);
  });

  it('refuses a duplicate (409), a bad name (400) and another namespace (403)', async () => {
    const dup = await srv.call(alice.key, 'POST', '/repos/', { name: 'sales' });
    expect(dup.status).toBe(409);
    expect(((await dup.json()) as { error: { code: string } }).error.code).toBe('42P06');
    const bad = await srv.call(alice.key, 'POST', '/repos/', { name: 'no spaces' });
    expect(bad.status).toBe(400);
    const other = await srv.call(alice.key, 'POST', '/repos/', { name: `${bob.name}/mine` });
    expect(other.status).toBe(403);
  });

  it('GET /repos/ lists only the caller\'s own repos', async () => {
    await srv.call(bob.key, 'POST', '/repos/', { name: 'bobs', is_private: false });
    const r = await srv.call(alice.key, 'GET', '/repos/');
    const repos = ((await r.json()) as { repos: RepoJson[] }).repos;
    expect(repos.map((x) => x.name)).toEqual([`${alice.name}/open.data-1`, `${alice.name}/sales`]);
  });

  it('GET /repos/<user>/<repo>/ adds tables with typed columns', async () => {
    await srv.query(alice.key, `CREATE TABLE "${alice.name}/sales"."Orders 2024" (id bigint, price numeric(10,2), tags text[], at timestamptz)`);
    await srv.query(alice.key, `CREATE VIEW "${alice.name}/sales".cheap AS SELECT id FROM "${alice.name}/sales"."Orders 2024" WHERE price < 1`);
    const r = await srv.call(alice.key, 'GET', `/repos/${alice.name}/sales/`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as RepoJson & { tables: unknown };
    expect(body.name).toBe(`${alice.name}/sales`);
    const plain = (name: string, type: string) => ({ name, type, nullable: true, default: null });
    expect(body.tables).toEqual([
      {
        name: 'Orders 2024',
        // Postgres 17 keeps reltuples at -1 until the first VACUUM or ANALYZE: "unknown", not 0.
        row_estimate: null,
        primary_key: [],
        columns: [plain('id', 'BIGINT'), plain('price', 'NUMERIC(10,2)'), plain('tags', 'TEXT[]'), plain('at', 'TIMESTAMP WITH TIME ZONE')],
      },
      { name: 'cheap', row_estimate: null, primary_key: [], columns: [plain('id', 'BIGINT')] },
    ]);
    // The path works with and without its trailing slash.
    expect((await srv.call(alice.key, 'GET', `/repos/${alice.name}/sales`)).status).toBe(200);
  });

  it('GET /repos/<user>/<repo>/ adds primary keys in key order, NOT NULL, defaults and the planner\'s row estimate', async () => {
    await srv.call(alice.key, 'POST', '/repos/', { name: 'meta' });
    const s = `"${alice.name}/meta"`;
    // Names with spaces, quotes and slashes are reported exactly; the key's order is not the columns' order.
    const created = await srv.query(
      alice.key,
      `CREATE TABLE ${s}."line ""items""/2024" ("order" bigint, "line no" integer, sku text NOT NULL DEFAULT 'n/a', qty integer DEFAULT 1, at timestamptz DEFAULT now(), double integer GENERATED ALWAYS AS (qty * 2) STORED, PRIMARY KEY ("line no", "order"))`,
    );
    expect(created.status, created.text).toBe(200);
    expect((await srv.query(alice.key, `INSERT INTO ${s}."line ""items""/2024" ("order", "line no") SELECT i / 10, i % 10 FROM generate_series(0, 1233) AS i`)).status).toBe(200);
    expect((await srv.query(alice.key, `CREATE TABLE ${s}.empty (id serial PRIMARY KEY)`)).status).toBe(200);
    await srv.control.admin.query(`ANALYZE ${s}."line ""items""/2024"`);
    const r = await srv.call(alice.key, 'GET', `/repos/${alice.name}/meta/`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { tables: unknown };
    expect(body.tables).toEqual([
      {
        name: 'empty',
        row_estimate: null,
        primary_key: ['id'],
        columns: [{ name: 'id', type: 'INTEGER', nullable: false, default: `nextval('"${alice.name}/meta".empty_id_seq'::regclass)` }],
      },
      {
        name: 'line "items"/2024',
        // ANALYZE of a table this small reads every row: the estimate is exact.
        row_estimate: 1234,
        primary_key: ['line no', 'order'],
        columns: [
          { name: 'order', type: 'BIGINT', nullable: false, default: null },
          { name: 'line no', type: 'INTEGER', nullable: false, default: null },
          { name: 'sku', type: 'TEXT', nullable: false, default: "'n/a'::text" },
          { name: 'qty', type: 'INTEGER', nullable: true, default: '1' },
          { name: 'at', type: 'TIMESTAMP WITH TIME ZONE', nullable: true, default: 'now()' },
          // A generation expression is not a default.
          { name: 'double', type: 'INTEGER', nullable: true, default: null },
        ],
      },
    ]);
    // After a TRUNCATE, ANALYZE says 0 rows: known to be empty, unlike never analysed.
    await srv.control.admin.query(`TRUNCATE ${s}."line ""items""/2024"`);
    await srv.control.admin.query(`ANALYZE ${s}."line ""items""/2024"`);
    const after = (await (await srv.call(alice.key, 'GET', `/repos/${alice.name}/meta/`)).json()) as { tables: { row_estimate: number | null }[] };
    expect(after.tables.map((t) => t.row_estimate)).toEqual([null, 0]);
  });

  it('PATCH changes visibility and description; the sharing follows at once', async () => {
    expect((await srv.query(bob.key, `SELECT id FROM "${alice.name}/sales"."Orders 2024"`)).status).toBe(403);
    const r = await srv.call(alice.key, 'PATCH', `/repos/${alice.name}/sales/`, { is_private: false, description: 'now public' });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ is_private: false, description: 'now public' });
    expect((await srv.query(bob.key, `SELECT id FROM "${alice.name}/sales"."Orders 2024"`)).status).toBe(200);
    await srv.call(alice.key, 'PATCH', `/repos/${alice.name}/sales/`, { is_private: true });
    expect((await srv.query(bob.key, `SELECT id FROM "${alice.name}/sales"."Orders 2024"`)).status).toBe(403);
    expect((await srv.call(alice.key, 'PATCH', `/repos/${alice.name}/sales/`, {})).status).toBe(400);
  });

  it('PUT, GET and DELETE collaborators', async () => {
    const put = await srv.call(alice.key, 'PUT', `/repos/${alice.name}/sales/collaborators/${bob.name}`, { permission: 'read' });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ user: bob.name, permission: 'read' });
    expect((await srv.query(bob.key, `SELECT id FROM "${alice.name}/sales"."Orders 2024"`)).status).toBe(200);
    const list = await srv.call(alice.key, 'GET', `/repos/${alice.name}/sales/collaborators/`);
    expect(await list.json()).toEqual({ collaborators: [{ user: bob.name, permission: 'read' }] });
    const badPermission = await srv.call(alice.key, 'PUT', `/repos/${alice.name}/sales/collaborators/${bob.name}`, { permission: 'admin' });
    expect(badPermission.status).toBe(400);
    const nobody = await srv.call(alice.key, 'PUT', `/repos/${alice.name}/sales/collaborators/nobody_here`, { permission: 'read' });
    expect(nobody.status).toBe(404);
    expect((await srv.call(alice.key, 'DELETE', `/repos/${alice.name}/sales/collaborators/${bob.name}`)).status).toBe(204);
    expect((await srv.call(alice.key, 'DELETE', `/repos/${alice.name}/sales/collaborators/${bob.name}`)).status).toBe(404);
    expect((await srv.query(bob.key, `SELECT id FROM "${alice.name}/sales"."Orders 2024"`)).status).toBe(403);
  });

  it('collaborators added and removed all at once: every request succeeds', async () => {
    await srv.call(alice.key, 'POST', '/repos/', { name: 'shared-at-once' });
    const users = await Promise.all(Array.from({ length: 8 }, (_, i) => srv.user(`many${i}`)));
    const path = (u: { name: string }) => `/repos/${alice.name}/shared-at-once/collaborators/${u.name}`;
    const put = await Promise.all(users.map((u) => srv.call(alice.key, 'PUT', path(u), { permission: 'write' })));
    expect(put.map((r) => r.status)).toEqual(users.map(() => 200));
    const list = await srv.call(alice.key, 'GET', `/repos/${alice.name}/shared-at-once/collaborators/`);
    expect(((await list.json()) as { collaborators: unknown[] }).collaborators).toHaveLength(8);
    const removed = await Promise.all(users.map((u) => srv.call(alice.key, 'DELETE', path(u))));
    expect(removed.map((r) => r.status)).toEqual(users.map(() => 204));
  });

  it('DELETE removes the repo with its tables (204); then it is 404', async () => {
    expect((await srv.call(alice.key, 'DELETE', `/repos/${alice.name}/open.data-1/`)).status).toBe(204);
    expect((await srv.call(alice.key, 'GET', `/repos/${alice.name}/open.data-1/`)).status).toBe(404);
    expect((await srv.call(alice.key, 'DELETE', `/repos/${alice.name}/open.data-1/`)).status).toBe(404);
  });

  it('an unknown endpoint is 404 with the error body', async () => {
    const r = await srv.call(alice.key, 'GET', '/nothing-here');
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('42704');
  });
});

describe('OpenAPI', () => {
  it('/api/openapi.json describes every route from the TypeBox schemas, with bearer security and the shared error', async () => {
    const r = await fetch(`${srv.url}/api/openapi.json`);
    expect(r.status).toBe(200);
    const doc = (await r.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { security?: unknown; responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      '/api/v1beta/keys/',
      '/api/v1beta/keys/{id}',
      '/api/v1beta/query/',
      '/api/v1beta/repos/',
      '/api/v1beta/repos/{owner}/{repo}/',
      '/api/v1beta/repos/{owner}/{repo}/collaborators/',
      '/api/v1beta/repos/{owner}/{repo}/collaborators/{user}',
      '/healthz',
    ]));
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    const query = doc.paths['/api/v1beta/query/']!.post!;
    expect(query.security).toEqual([{ bearer: [] }]);
    expect(Object.keys(query.responses)).toEqual(expect.arrayContaining(['200', '4XX', '5XX']));
    expect(JSON.stringify(query.responses['4XX'])).toContain('SQLSTATE');
  });

  it('/api/docs serves the interactive documentation', async () => {
    const r = await fetch(`${srv.url}/api/docs/static/index.html`);
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('swagger');
  });
});
