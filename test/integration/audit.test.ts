/**
 * The audit log against the real service: each audited action of the wire, REST, console and
 * admin CLI front ends is stored once with its fields; no key secret or password reaches any
 * row; old rows are deleted by the retention sweep; `repobase audit` reads them.
 */
import { createServer } from 'node:net';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_BUFFER_ROWS, AuditLog } from '../../src/control/audit.js';
import { ControlPlane } from '../../src/control/control-plane.js';
import { CONTROL_SCHEMA } from '../../src/control/migrations.js';
import { createLogger } from '../../src/shared/logger.js';
import { openCluster } from '../../src/upstream/cluster.js';
import { runCli } from '../helpers/cli.js';
import { startTestService, type TestService } from '../helpers/service.js';

interface Row {
  user_name: string | null;
  login_name: string | null;
  source: string | null;
  front_end: string;
  request_id: string | null;
  action: string;
  target: string | null;
  detail: string | null;
  sql_text: string | null;
  sqlstate: string | null;
}

let srv: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
const PASSWORD = 'correct horse battery staple';
const ROLE_PASSWORD = 'hunter2-never-stored';
const secrets: string[] = [PASSWORD, ROLE_PASSWORD];

/** The secret part of `rb_<id>_<secret>` (it may hold `_` itself). */
const secretOf = (key: string) => key.slice('rb_'.length + 12 + 1);

beforeAll(async () => {
  srv = await startTestService();
  alice = await srv.user('alice');
  bob = await srv.user('bob');
  secrets.push(secretOf(alice.key), secretOf(bob.key));
});

afterAll(async () => {
  await srv?.stop();
});

function call(method: string, path: string, o: { key?: string; body?: unknown; origin?: string; cookie?: string; csrf?: string } = {}): Promise<Response> {
  return fetch(`${srv.httpUrl}/api/v1beta${path}`, {
    method,
    headers: {
      ...(o.key !== undefined && { authorization: `Bearer ${o.key}` }),
      ...(o.body !== undefined && { 'content-type': 'application/json' }),
      ...(o.origin !== undefined && { origin: o.origin }),
      ...(o.cookie !== undefined && { cookie: o.cookie }),
      ...(o.csrf !== undefined && { 'x-csrf-token': o.csrf }),
    },
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
}

/** Every row written so far (the buffer flushed first). */
async function rows(): Promise<Row[]> {
  await srv.control.audit.flush();
  const res = await srv.control.admin.query<Row>(
    `SELECT user_name, login_name, source, front_end, request_id, action, target, detail, sql_text, sqlstate FROM ${CONTROL_SCHEMA}.audit_log ORDER BY id`,
  );
  return res.rows;
}

async function wireClient(user: string, key: string): Promise<pg.Client> {
  const c = new pg.Client(srv.pgOptions(user, key));
  await c.connect();
  return c;
}

describe('audit log', () => {
  it('wire: log-ins, failed log-ins (known and unknown user), repo creation, DDL, denials, a password statement redacted', async () => {
    const c = await wireClient(alice.name, alice.key);
    try {
      await c.query(`CREATE SCHEMA "${alice.name}/wired"`);
      await c.query(`CREATE TABLE "${alice.name}/wired".t (id int)`);
      await c.query(`INSERT INTO "${alice.name}/wired".t VALUES (1)`); // not DDL: not audited
      await expect(c.query(`SELECT * FROM "${bob.name}/hidden".t`)).rejects.toMatchObject({ code: '42501' });
      await expect(c.query(`ALTER ROLE ${alice.name} PASSWORD '${ROLE_PASSWORD}'`)).rejects.toMatchObject({ code: '42501' });
      // Extended protocol: the DDL's text comes from its Parse.
      await c.query({ name: 'make-index', text: `CREATE INDEX ON "${alice.name}/wired".t (id)` });
    } finally {
      await c.end();
    }
    await expect(wireClient(alice.name, bob.key)).rejects.toMatchObject({ code: '28P01' });
    const unknown = `nobody_${alice.name.slice(6)}`;
    await expect(wireClient(unknown, alice.key)).rejects.toMatchObject({ code: '28P01' });

    const all = await rows();
    const wire = all.filter((r) => r.front_end === 'wire');
    const logins = wire.filter((r) => r.action === 'login');
    expect(logins).toEqual([expect.objectContaining({ user_name: alice.name, login_name: alice.name, source: '127.0.0.1' })]);
    const connId = logins[0]!.request_id;
    expect(connId).toMatch(/^[0-9a-f]{12}$/);
    const failed = wire.filter((r) => r.action === 'login_failed');
    expect(failed).toEqual([
      expect.objectContaining({ user_name: alice.name, login_name: alice.name, source: '127.0.0.1' }),
      expect.objectContaining({ user_name: null, login_name: unknown, source: '127.0.0.1' }),
    ]);
    expect(failed[0]!.request_id).not.toBe(connId);

    const mine = wire.filter((r) => r.request_id === connId && r.action !== 'login');
    expect(mine.map((r) => [r.action, r.target, r.sqlstate])).toEqual([
      ['repo_create', `${alice.name}/wired`, null],
      ['ddl', 'CREATE TABLE', null],
      ['statement_denied', null, '42501'],
      ['statement_denied', null, '42501'],
      ['ddl', 'CREATE INDEX', null],
    ]);
    expect(mine.every((r) => r.user_name === alice.name && r.source === '127.0.0.1')).toBe(true);
    expect(mine[0]!.sql_text).toBe(`CREATE SCHEMA "${alice.name}/wired"`);
    expect(mine[1]!.sql_text).toBe(`CREATE TABLE "${alice.name}/wired".t (id int)`);
    expect(mine[2]!.sql_text).toBe(`SELECT * FROM "${bob.name}/hidden".t`);
    expect(mine[3]!.sql_text).toBe(`ALTER ROLE ${alice.name} PASSWORD '***'`);
    expect(mine[4]!.sql_text).toBe(`CREATE INDEX ON "${alice.name}/wired".t (id)`);
  });

  it('REST: keys, repos, visibility, sharing, denied and DDL statements, a wrong key', async () => {
    const made = await call('POST', '/keys/', { key: alice.key });
    expect(made.status).toBe(201);
    const newKey = (await made.json()) as { id: string; key: string };
    secrets.push(secretOf(newKey.key));
    expect((await call('DELETE', `/keys/${newKey.id}`, { key: alice.key })).status).toBe(204);
    expect((await call('POST', '/repos/', { key: alice.key, body: { name: 'rested' } })).status).toBe(201);
    expect((await call('PATCH', `/repos/${alice.name}/rested/`, { key: alice.key, body: { is_private: false } })).status).toBe(200);
    expect((await call('PATCH', `/repos/${alice.name}/rested/`, { key: alice.key, body: { description: 'only the text' } })).status).toBe(200);
    expect((await call('PUT', `/repos/${alice.name}/rested/collaborators/${bob.name}`, { key: alice.key, body: { permission: 'write' } })).status).toBe(200);
    expect((await call('DELETE', `/repos/${alice.name}/rested/collaborators/${bob.name}`, { key: alice.key })).status).toBe(204);
    const ddl = await call('POST', '/query/', { key: alice.key, body: { query_string: `CREATE TABLE "${alice.name}/rested".r (x text)` } });
    expect(ddl.status).toBe(200);
    const denied = await call('POST', '/query/', { key: alice.key, body: { query_string: `DROP TABLE "${bob.name}/x".y` } });
    expect(denied.status).toBe(403);
    expect((await call('DELETE', `/repos/${alice.name}/rested/`, { key: alice.key })).status).toBe(204);
    const wrongKey = `rb_${newKey.id}_${'A'.repeat(43)}`;
    const bad = await call('GET', '/repos/', { key: wrongKey });
    expect(bad.status).toBe(401);
    const requestId = bad.headers.get('x-request-id');

    const rest = (await rows()).filter((r) => r.front_end === 'rest');
    expect(rest.map((r) => [r.action, r.user_name, r.target, r.detail, r.sqlstate])).toEqual([
      ['key_create', alice.name, newKey.id, 'full', null],
      ['key_revoke', alice.name, newKey.id, null, null],
      ['repo_create', alice.name, `${alice.name}/rested`, 'private', null],
      ['repo_visibility', alice.name, `${alice.name}/rested`, 'public', null],
      ['share_set', alice.name, `${alice.name}/rested`, `${bob.name}:write`, null],
      ['share_remove', alice.name, `${alice.name}/rested`, bob.name, null],
      ['ddl', alice.name, 'CREATE TABLE', null, null],
      ['statement_denied', alice.name, null, null, '42501'],
      ['repo_delete', alice.name, `${alice.name}/rested`, null, null],
      ['login_failed', null, `rb_${newKey.id}`, null, null],
    ]);
    expect(rest.every((r) => r.source === '127.0.0.1' && /^[0-9a-f-]{36}$/.test(r.request_id ?? ''))).toBe(true);
    expect(rest.at(-1)!.request_id).toBe(requestId);
    expect(rest[6]!.sql_text).toBe(`CREATE TABLE "${alice.name}/rested".r (x text)`);
    expect(rest[7]!.sql_text).toBe(`DROP TABLE "${bob.name}/x".y`);
  });

  it('console: log-in and failed log-in; the password is nowhere', async () => {
    await srv.control.people.setPassword(bob.name, PASSWORD);
    const ok = await call('POST', '/auth/login', { origin: srv.httpUrl, body: { username: bob.name, password: PASSWORD } });
    expect(ok.status).toBe(200);
    const wrong = await call('POST', '/auth/login', { origin: srv.httpUrl, body: { username: bob.name, password: `${PASSWORD}!` } });
    expect(wrong.status).toBe(401);
    const cookie = ok.headers.getSetCookie().find((c) => c.startsWith('rb_session='))!.split(';')[0]!;
    const { csrf_token } = (await ok.json()) as { csrf_token: string };
    // A change made with the session cookie is the console's.
    expect((await call('POST', '/repos/', { cookie, csrf: csrf_token, origin: srv.httpUrl, body: { name: 'clicked' } })).status).toBe(201);

    const console = (await rows()).filter((r) => r.front_end === 'console');
    expect(console.map((r) => [r.action, r.user_name, r.login_name, r.target])).toEqual([
      ['login', bob.name, bob.name, null],
      ['login_failed', bob.name, bob.name, null],
      ['repo_create', bob.name, null, `${bob.name}/clicked`],
    ]);
  });

  it('no row holds a key secret or a password', async () => {
    const res = await srv.control.admin.query<{ t: string }>(`SELECT a::text AS t FROM ${CONTROL_SCHEMA}.audit_log a`);
    expect(res.rows.length).toBeGreaterThan(20);
    for (const { t } of res.rows) for (const s of secrets) expect(t).not.toContain(s);
  });

  it('retention: the sweep deletes rows older than the configured days, and only those', async () => {
    await srv.control.admin.query(
      `INSERT INTO ${CONTROL_SCHEMA}.audit_log (at, user_name, front_end, action) VALUES (now() - interval '91 days', $1, 'rest', 'key_create'), (now() - interval '89 days', $1, 'rest', 'key_revoke')`,
      [alice.name],
    );
    const before = (await rows()).length;
    expect(await srv.control.audit.sweep(90)).toBe(1);
    const after = await rows();
    expect(after.length).toBe(before - 1);
    expect(after.filter((r) => r.action === 'key_revoke' && r.request_id === null)).toHaveLength(1);
  });

  it('rows recorded just before a stop are written by it (audit and usage)', async () => {
    const log = createLogger('warn');
    const cluster = await openCluster(srv.config, log);
    try {
      const other = await ControlPlane.open(cluster, log, { listen: false });
      other.audit.record({ action: 'key_revoke', user: alice.name, frontEnd: 'cli', source: null, requestId: null, target: 'flushed-at-stop' });
      other.usage.add(alice.name, { uploadBytes: 12345 });
      await other.close();
    } finally {
      await cluster.close();
    }
    expect((await rows()).filter((r) => r.target === 'flushed-at-stop')).toHaveLength(1);
    const usage = await srv.control.usageRows({ user: alice.name });
    expect(usage.reduce((n, r) => n + r.uploadBytes, 0)).toBe(12345);
  });

  it('an unreachable control plane: recording stays instant, the buffer is bounded, one warning per outage, every row accounted for', async () => {
    const lines: { msg: string; pending?: number; dropped?: number; lost?: number }[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p)); // nobody listens there any more
      });
    });
    const pool = new pg.Pool({ host: '127.0.0.1', port, user: 'nobody', password: 'x', database: 'none', connectionTimeoutMillis: 2000 });
    pool.on('error', () => undefined);
    const audit = new AuditLog(pool, log);
    const n = AUDIT_BUFFER_ROWS + 250;
    const started = performance.now();
    for (let i = 0; i < n; i++) audit.record({ action: 'ddl', user: 'u', frontEnd: 'wire', source: null, requestId: null, target: 'CREATE TABLE', sql: 'CREATE TABLE t ()' });
    const perRowMs = (performance.now() - started) / n;
    await audit.flush();
    await audit.close();
    await pool.end();
    // Once per outage, however many retries: the first failure and the loss at stop, each row counted.
    expect(lines.map((l) => l.msg.split(';')[0])).toEqual(['writing audit rows failed', 'audit rows lost at stop: the control plane did not answer']);
    expect(lines[0]!.pending).toBeLessThanOrEqual(AUDIT_BUFFER_ROWS);
    expect(lines[1]!.lost).toBe(n);
    expect(perRowMs).toBeLessThan(0.1); // a loaded machine does ~0.002 ms
  });

  it('repobase audit: filtered by user, time and limit, as JSON lines; a bad --since is a usage error', async () => {
    const env = { REPOBASE_UPSTREAM_URL: srv.config.upstreamUrl, REPOBASE_DATA_DIR: srv.config.dataDir, REPOBASE_SECRET: srv.config.secret };
    const json = await runCli(['audit', '--user', bob.name, '--since', '1h', '--limit', '2', '--json'], env);
    expect(json.code).toBe(0);
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { action: string; user: string; front_end: string; source: string });
    expect(lines.map((l) => [l.action, l.user, l.front_end])).toEqual([
      ['repo_create', bob.name, 'console'],
      ['login_failed', bob.name, 'console'],
    ]); // newest first, cut at the limit
    const bad = await runCli(['audit', '--since', 'yesterday'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('invalid time "yesterday"');
  });
});
