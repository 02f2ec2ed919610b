/**
 * The server side of the web console: sign-up, log-in and log-out with a session cookie, the
 * CSRF rules for cookie-authenticated changes, repos shared with the caller, connection info,
 * security headers and the console's files with the index.html fallback.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { AsyncQueries } from '../../src/http/async-queries.js';
import { CONSOLE_DIR } from '../../src/http/console.js';
import { createPolicy, type Policy } from '../../src/policy/index.js';
import type { Config } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { openCluster, type Cluster } from '../../src/upstream/cluster.js';
import { RolePools } from '../../src/upstream/role-pools.js';
import { sessionPoolFor, type SessionPool } from '../../src/upstream/session-pool.js';
import { startTestService, type TestService } from '../helpers/service.js';

const log = createLogger('warn');
let srv: TestService;
let cluster: Cluster;
let policy: Policy;
let pools: RolePools;
let sessions: SessionPool;
let queries: AsyncQueries;
const extraApps: { close(): Promise<unknown> }[] = [];
const suffix = Math.random().toString(36).slice(2, 7);
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  srv = await startTestService();
  // For apps with another config or console directory on the same control plane.
  cluster = await openCluster(srv.config, log);
  policy = await createPolicy({ maxStatementBytes: srv.config.maxStatementBytes });
  pools = new RolePools({ cluster, config: srv.config, log });
  sessions = sessionPoolFor(cluster, { maxPerRole: 2, idleMs: 10_000, reset: 'lazy', waitMs: 10_000, log });
  queries = await AsyncQueries.start({ cluster, control: srv.control, policy, config: srv.config, log });
});

afterAll(async () => {
  for (const app of extraApps) await app.close();
  await queries?.close();
  sessions?.close();
  await pools?.close();
  await policy?.close();
  await cluster?.close();
  await srv?.stop();
});

/** Another HTTP front end on the same control plane; returns its base URL. */
async function appWith(config: Partial<Config>, consoleDir?: string): Promise<string> {
  const app = await buildApp({ config: { ...srv.config, ...config }, control: srv.control, log, policy, pools, sessions, queries, wirePort: srv.pgPort, ...(consoleDir && { consoleDir }) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  extraApps.push(app);
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

interface CallOptions {
  /** `rb_session=…` */
  cookie?: string;
  csrf?: string;
  key?: string;
  origin?: string;
  body?: unknown;
  headers?: Record<string, string>;
  base?: string;
}

function call(method: string, path: string, o: CallOptions = {}): Promise<Response> {
  return fetch(`${o.base ?? srv.httpUrl}/api/v1beta${path}`, {
    method,
    headers: {
      ...(o.cookie !== undefined && { cookie: o.cookie }),
      ...(o.csrf !== undefined && { 'x-csrf-token': o.csrf }),
      ...(o.key !== undefined && { authorization: `Bearer ${o.key}` }),
      ...(o.origin !== undefined && { origin: o.origin }),
      ...(o.body !== undefined && { 'content-type': 'application/json' }),
      ...o.headers,
    },
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
}

/** The `Set-Cookie` line of the session cookie, if the answer has one. */
function setCookieOf(res: Response): string | undefined {
  return res.headers.getSetCookie().find((c) => c.startsWith('rb_session='));
}

/** `rb_session=<id>` from an answer that must set it. */
function cookieOf(res: Response): string {
  const line = setCookieOf(res);
  expect(line, 'Set-Cookie rb_session').toBeDefined();
  return line!.split(';')[0]!;
}

async function errorOf(res: Response): Promise<{ code: string; message: string; hint: string | null }> {
  return ((await res.json()) as { error: { code: string; message: string; hint: string | null } }).error;
}

interface Person {
  name: string;
  cookie: string;
  csrf: string;
}

async function signUp(base: string): Promise<Person> {
  const name = `${base}_${suffix}`;
  const res = await call('POST', '/auth/signup', { body: { username: name, password: PASSWORD } });
  expect(res.status).toBe(201);
  const body = (await res.json()) as { user: string; csrf_token: string };
  return { name, cookie: cookieOf(res), csrf: body.csrf_token };
}

async function logIn(name: string, opts: { cookie?: string; password?: string } = {}): Promise<Response> {
  return call('POST', '/auth/login', { body: { username: name, password: opts.password ?? PASSWORD }, ...(opts.cookie && { cookie: opts.cookie }) });
}

async function repoNames(who: CallOptions, query = ''): Promise<string[]> {
  const res = await call('GET', `/repos/${query}`, who);
  expect(res.status).toBe(200);
  return ((await res.json()) as { repos: { name: string }[] }).repos.map((r) => r.name);
}

const foreign = 'http://evil.example';

describe('sign-up and the session cookie', () => {
  let ann: Person;

  it('sign-up answers 201 with the user and a CSRF token, and sets an HttpOnly SameSite=Lax cookie (not Secure over http)', async () => {
    const name = `ann_${suffix}`;
    const res = await call('POST', '/auth/signup', { body: { username: name, password: PASSWORD } });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { user: string; csrf_token: string };
    expect(body).toEqual({ user: name, csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    const line = setCookieOf(res)!;
    expect(line).toMatch(/^rb_session=[A-Za-z0-9_-]{43};/);
    const attrs = line.split(';').map((a) => a.trim().toLowerCase());
    expect(attrs).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/', `max-age=${14 * 24 * 3600}`]));
    expect(attrs).not.toContain('secure');
    ann = { name, cookie: cookieOf(res), csrf: body.csrf_token };
    // The id is stored only as a hash.
    const stored = await srv.control.admin.query<{ id_hash: Buffer }>('SELECT id_hash FROM _repobase.web_sessions WHERE user_name = $1', [name]);
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0]!.id_hash.toString('base64url')).not.toBe(ann.cookie.slice('rb_session='.length));
  });

  it('GET /auth/session answers the user and the same CSRF token; GETs need no token', async () => {
    const res = await call('GET', '/auth/session', { cookie: ann.cookie });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ user: ann.name, csrf_token: ann.csrf });
    expect(await repoNames({ cookie: ann.cookie })).toEqual([]);
    const none = await call('GET', '/auth/session');
    expect(none.status).toBe(401);
    expect((await errorOf(none)).code).toBe('28000');
  });

  it('a change with the cookie and the CSRF token works', async () => {
    const res = await call('POST', '/repos/', { cookie: ann.cookie, csrf: ann.csrf, body: { name: 'notes' } });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ name: `${ann.name}/notes`, permission: 'own' });
    const same = await call('POST', '/repos/', { cookie: ann.cookie, csrf: ann.csrf, origin: srv.httpUrl, body: { name: 'same-origin' } });
    expect(same.status).toBe(201);
  });

  it('without the CSRF token, with a wrong one, or from another origin: 403 42501 and nothing changes', async () => {
    for (const [what, opts] of [
      ['no token', { cookie: ann.cookie }],
      ['wrong token', { cookie: ann.cookie, csrf: 'x'.repeat(43) }],
      ['foreign origin', { cookie: ann.cookie, csrf: ann.csrf, origin: foreign }],
      ['null origin', { cookie: ann.cookie, csrf: ann.csrf, origin: 'null' }],
    ] as const) {
      const res = await call('POST', '/repos/', { ...opts, body: { name: 'forged' } });
      expect(res.status, what).toBe(403);
      const err = await errorOf(res);
      expect(err.code, what).toBe('42501');
      expect(err.message, what).toContain('CSRF');
    }
    expect(await repoNames({ cookie: ann.cookie })).toEqual([`${ann.name}/notes`, `${ann.name}/same-origin`]);
    // The query route is guarded the same way.
    const q = await call('POST', '/query/', { cookie: ann.cookie, body: { query_string: `DROP SCHEMA "${ann.name}/notes"` } });
    expect(q.status).toBe(403);
    expect(await repoNames({ cookie: ann.cookie })).toContain(`${ann.name}/notes`);
  });

  it('keys can be created, listed and used with the cookie (the console makes them this way)', async () => {
    // A person who signed up has no key until they make one (no secret nobody ever saw).
    const before = await call('GET', '/keys/', { cookie: ann.cookie });
    expect(((await before.json()) as { keys: unknown[] }).keys).toEqual([]);
    const created = await call('POST', '/keys/', { cookie: ann.cookie, csrf: ann.csrf });
    expect(created.status).toBe(201);
    const key = ((await created.json()) as { key: string }).key;
    expect(await repoNames({ key })).toEqual([`${ann.name}/notes`, `${ann.name}/same-origin`]);
    const list = await call('GET', '/keys/', { cookie: ann.cookie });
    expect(((await list.json()) as { keys: unknown[] }).keys.length).toBe(1);
  });

  it('Bearer keys work as before, need no CSRF token and ignore the Origin; the session route shows csrf_token null', async () => {
    const bob = await srv.user('bob');
    const res = await call('POST', '/repos/', { key: bob.key, origin: foreign, body: { name: 'by-key' } });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ permission: 'own' });
    expect(await (await call('GET', '/auth/session', { key: bob.key })).json()).toEqual({ user: bob.name, csrf_token: null });
    // A key wins over a cookie sent alongside it.
    expect(await (await call('GET', '/auth/session', { key: bob.key, cookie: ann.cookie })).json()).toEqual({ user: bob.name, csrf_token: null });
    expect((await call('POST', '/query/', { key: bob.key, body: { query_string: 'SELECT 1' } })).status).toBe(200);
  });

  it('refuses sign-up of a taken name (409), an invalid or reserved name and a short password (400), and from another origin (403)', async () => {
    const taken = await call('POST', '/auth/signup', { body: { username: ann.name, password: PASSWORD } });
    expect(taken.status).toBe(409);
    expect((await errorOf(taken)).code).toBe('42710');
    for (const body of [
      { username: 'Bad Name', password: PASSWORD },
      { username: 'postgres', password: PASSWORD },
      { username: `short_${suffix}`, password: 'too short' },
    ]) {
      expect((await call('POST', '/auth/signup', { body })).status, JSON.stringify(body)).toBe(400);
    }
    const cross = await call('POST', '/auth/signup', { origin: foreign, body: { username: `cross_${suffix}`, password: PASSWORD } });
    expect(cross.status).toBe(403);
    expect((await errorOf(cross)).message).toContain('CSRF');
    expect((await srv.control.listUsers()).map((u) => u.name)).not.toContain(`cross_${suffix}`);
  });
});

describe('log-in and log-out', () => {
  let cyd: Person;

  beforeAll(async () => {
    cyd = await signUp('cyd');
  });

  it('each log-in gets a new session id; the session the request carried ends, other sessions stay', async () => {
    const first = await logIn(cyd.name);
    expect(first.status).toBe(200);
    const a = cookieOf(first);
    const b = cookieOf(await logIn(cyd.name));
    expect(new Set([cyd.cookie, a, b]).size).toBe(3);
    // Another browser's session is untouched by a log-in elsewhere.
    expect((await call('GET', '/auth/session', { cookie: a })).status).toBe(200);
    // Logging in while carrying a session: that one ends (no fixation).
    const renewed = await logIn(cyd.name, { cookie: a });
    const c = cookieOf(renewed);
    expect(c).not.toBe(a);
    expect((await call('GET', '/auth/session', { cookie: a })).status).toBe(401);
    const info = (await (await call('GET', '/auth/session', { cookie: c })).json()) as { user: string; csrf_token: string };
    expect(info.user).toBe(cyd.name);
    expect(info.csrf_token).toBe(((await renewed.json()) as { csrf_token: string }).csrf_token);
  });

  it('log-in refuses another origin (login CSRF)', async () => {
    const res = await call('POST', '/auth/login', { origin: foreign, body: { username: cyd.name, password: PASSWORD } });
    expect(res.status).toBe(403);
    expect(setCookieOf(res)).toBeUndefined();
  });

  it('log-out needs the CSRF token, ends the session and clears the cookie; the same cookie is then 401', async () => {
    const session = await logIn(cyd.name);
    const cookie = cookieOf(session);
    const { csrf_token: csrf } = (await session.json()) as { csrf_token: string };
    expect((await call('POST', '/auth/logout', { cookie })).status).toBe(403);
    expect((await call('GET', '/auth/session', { cookie })).status).toBe(200);
    const out = await call('POST', '/auth/logout', { cookie, csrf });
    expect(out.status).toBe(204);
    expect(setCookieOf(out)).toMatch(/^rb_session=;.*(Max-Age=0|Expires=Thu, 01 Jan 1970)/i);
    const after = await call('GET', '/repos/', { cookie });
    expect(after.status).toBe(401);
    expect(await errorOf(after)).toMatchObject({ code: '28000', message: 'session expired or ended' });
    expect(setCookieOf(after)).toMatch(/^rb_session=;/);
    // Logging out without a session is not an error.
    expect((await call('POST', '/auth/logout')).status).toBe(204);
  });

  it('an expired session is 401 and its cookie is cleared', async () => {
    const cookie = cookieOf(await logIn(cyd.name));
    expect((await call('GET', '/repos/', { cookie })).status).toBe(200);
    await srv.control.admin.query(`UPDATE _repobase.web_sessions SET expires_at = now() - interval '1 minute' WHERE user_name = $1`, [cyd.name]);
    const res = await call('GET', '/repos/', { cookie });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('28000');
    expect(setCookieOf(res)).toMatch(/^rb_session=;/);
  });

  it('a session is extended when less than 13 days remain (and the cookie sent again), not on every request', async () => {
    const cookie = cookieOf(await logIn(cyd.name));
    const id = cookie.slice('rb_session='.length);
    const expiry = () =>
      srv.control.admin
        .query<{ left: number }>(`SELECT extract(epoch FROM expires_at - now()) AS left FROM _repobase.web_sessions WHERE id_hash = sha256(convert_to($1, 'UTF8'))`, [id])
        .then((r) => Number(r.rows[0]!.left));
    const fresh = await call('GET', '/repos/', { cookie });
    expect(setCookieOf(fresh)).toBeUndefined();
    await srv.control.admin.query(`UPDATE _repobase.web_sessions SET expires_at = now() + interval '2 days' WHERE id_hash = sha256(convert_to($1, 'UTF8'))`, [id]);
    const renewed = await call('GET', '/repos/', { cookie });
    expect(renewed.status).toBe(200);
    expect(setCookieOf(renewed)).toMatch(new RegExp(`^${cookie};.*Max-Age=${14 * 24 * 3600}`));
    expect(await expiry()).toBeGreaterThan(13.9 * 24 * 3600);
  });

  it('a wrong password, an unknown user and a user without a password get the identical 401', async () => {
    const keyOnly = await srv.user('keyonly');
    const answers = await Promise.all(
      [
        { username: cyd.name, password: 'wrong password!' },
        { username: `nobody_${suffix}`, password: PASSWORD },
        { username: keyOnly.name, password: PASSWORD },
      ].map(async (body) => {
        const res = await call('POST', '/auth/login', { body });
        return { status: res.status, body: await res.text(), cookie: setCookieOf(res) };
      }),
    );
    expect(answers[0]!.status).toBe(401);
    expect(JSON.parse(answers[0]!.body)).toEqual({ error: { code: '28P01', message: 'invalid user name or password', detail: null, hint: null, position: null } });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    expect(answers[0]!.cookie).toBeUndefined();
  });

  it('repeated failures are answered more and more slowly; a success is not delayed', async () => {
    const target = await signUp('dee');
    await logIn(target.name); // a success resets this address's count
    const times: number[] = [];
    for (let i = 0; i < 4; i++) {
      const t = performance.now();
      const res = await logIn(target.name, { password: `guess number ${i}` });
      times.push(performance.now() - t);
      expect(res.status).toBe(401);
    }
    // 100, 200, 400, 800 ms (plus the hash)
    expect(times[3]!).toBeGreaterThan(700);
    expect(times[3]!).toBeGreaterThan(times[0]! + 500);
    const t = performance.now();
    expect((await logIn(target.name)).status).toBe(200);
    expect(performance.now() - t).toBeLessThan(600);
  });

  it('deleting a user ends their sessions', async () => {
    const eve = await signUp('eve');
    expect((await call('GET', '/auth/session', { cookie: eve.cookie })).status).toBe(200);
    await srv.control.deleteUser(eve.name);
    expect((await call('GET', '/auth/session', { cookie: eve.cookie })).status).toBe(401);
  });

  it('sign-up closed: 403 42501 saying so, with a hint; log-in still works', async () => {
    const base = await appWith({ signup: 'closed' });
    const res = await call('POST', '/auth/signup', { base, body: { username: `closed_${suffix}`, password: PASSWORD } });
    expect(res.status).toBe(403);
    const err = await errorOf(res);
    expect(err.code).toBe('42501');
    expect(err.message).toContain('sign-up is closed');
    expect(err.hint).toContain('administrator');
    expect((await call('POST', '/auth/login', { base, body: { username: cyd.name, password: PASSWORD } })).status).toBe(200);
  });
});

describe('repos with the caller\'s permission', () => {
  it('GET /repos/?include=shared adds repos shared with the caller, each with its permission', async () => {
    const fay = await signUp('fay');
    const gus = await srv.user('gus');
    await call('POST', '/repos/', { key: gus.key, body: { name: 'shared-ro' } });
    await call('POST', '/repos/', { key: gus.key, body: { name: 'shared-rw' } });
    await call('POST', '/repos/', { key: gus.key, body: { name: 'public', is_private: false } });
    expect((await call('PUT', `/repos/${gus.name}/shared-ro/collaborators/${fay.name}`, { key: gus.key, body: { permission: 'read' } })).status).toBe(200);
    expect((await call('PUT', `/repos/${gus.name}/shared-rw/collaborators/${fay.name}`, { key: gus.key, body: { permission: 'write' } })).status).toBe(200);
    await call('POST', '/repos/', { cookie: fay.cookie, csrf: fay.csrf, body: { name: 'mine' } });

    expect(await repoNames({ cookie: fay.cookie })).toEqual([`${fay.name}/mine`]);
    const res = await call('GET', '/repos/?include=shared', { cookie: fay.cookie });
    const repos = ((await res.json()) as { repos: { name: string; permission: string }[] }).repos;
    expect(repos.map((r) => [r.name, r.permission])).toEqual([
      [`${fay.name}/mine`, 'own'],
      [`${gus.name}/shared-ro`, 'read'],
      [`${gus.name}/shared-rw`, 'write'],
    ]);
    const detail = await call('GET', `/repos/${gus.name}/shared-ro/`, { cookie: fay.cookie });
    expect(await detail.json()).toMatchObject({ name: `${gus.name}/shared-ro`, permission: 'read', tables: [] });
    const pub = await call('GET', `/repos/${gus.name}/public/`, { cookie: fay.cookie });
    expect(await pub.json()).toMatchObject({ permission: 'read' });
    expect((await call('GET', '/repos/?include=everything', { cookie: fay.cookie })).status).toBe(400);
  });
});

/** GET with a Host header of our choice (fetch takes the host from the URL). */
function getWithHost(url: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { host, ...headers } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('connection info', () => {
  it('GET /connection answers the host the client used, the port the wire server listens on, the API URL and the database', async () => {
    const bob = await srv.user('conn');
    const res = await call('GET', '/connection', { key: bob.key });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      pg_host: '127.0.0.1',
      pg_port: srv.pgPort,
      api_url: `${srv.httpUrl}/api/v1beta`,
      service_database: srv.config.serviceDatabase,
    });
    expect(srv.pgPort).not.toBe(0);
    const v6 = await getWithHost(`${srv.httpUrl}/api/v1beta/connection`, '[::1]:8443', { authorization: `Bearer ${bob.key}` });
    expect(JSON.parse(v6.body)).toMatchObject({ pg_host: '::1', api_url: 'http://[::1]:8443/api/v1beta' });
    const named = await getWithHost(`${srv.httpUrl}/api/v1beta/connection`, 'db.example.com:8080', { authorization: `Bearer ${bob.key}` });
    expect(JSON.parse(named.body)).toMatchObject({ pg_host: 'db.example.com', api_url: 'http://db.example.com:8080/api/v1beta' });
    expect((await call('GET', '/connection')).status).toBe(401);
  });

  it('publicHost and publicPgPort override both', async () => {
    const base = await appWith({ publicHost: 'pg.example.com', publicPgPort: 6543 });
    const bob = await srv.user('pub');
    expect(await (await call('GET', '/connection', { base, key: bob.key })).json()).toMatchObject({ pg_host: 'pg.example.com', pg_port: 6543 });
  });
});

describe('headers, console files and docs', () => {
  const CSP =
    "default-src 'self';script-src 'self';style-src 'self' 'unsafe-inline';img-src 'self' data:;connect-src 'self';font-src 'self';object-src 'none';base-uri 'self';form-action 'self';frame-ancestors 'none'";

  it('pages carry the CSP (no inline scripts), nosniff, the frame and referrer policies; API answers nosniff, no framing and a CSP that allows nothing', async () => {
    for (const url of [`${srv.httpUrl}/`, `${srv.httpUrl}/login`, `${srv.httpUrl}/api/docs/`]) {
      const res = await fetch(url, { headers: { accept: 'text/html' } });
      expect(res.headers.get('content-security-policy'), url).toBe(CSP);
      expect(res.headers.get('x-content-type-options'), url).toBe('nosniff');
      expect(res.headers.get('referrer-policy'), url).toBe('strict-origin-when-cross-origin');
      expect(res.headers.get('x-frame-options'), url).toBe('DENY');
      expect(res.headers.get('cross-origin-opener-policy'), url).toBe('same-origin');
    }
    for (const url of [`${srv.httpUrl}/api/v1beta/repos/`, `${srv.httpUrl}/healthz`, `${srv.httpUrl}/api/v1beta/nothing`, `${srv.httpUrl}/api/openapi.json`]) {
      const res = await fetch(url, { headers: { accept: 'text/html' } });
      expect(res.headers.get('content-type'), url).toMatch(/^application\/json/);
      expect(res.headers.get('content-security-policy'), url).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options'), url).toBe('nosniff');
      expect(res.headers.get('x-frame-options'), url).toBe('DENY');
      expect(res.headers.get('cross-origin-resource-policy'), url).toBe('same-origin');
      // What governs a document's own behaviour is left off answers that are none.
      expect(res.headers.get('referrer-policy'), url).toBeNull();
      expect(res.headers.get('cross-origin-opener-policy'), url).toBeNull();
    }
    const api = await fetch(`${srv.httpUrl}/api/v1beta/repos/`);
    expect(api.status).toBe(401);
  });

  it('serves the console: index.html for / and client routes (no-cache), hashed assets cached for a year, JSON 404s elsewhere', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'repobase-console-'));
    await mkdir(join(dir, 'assets'));
    await writeFile(join(dir, 'index.html'), '<!doctype html><title>repobase console</title><script type="module" src="/assets/index-abc123.js"></script>');
    await writeFile(join(dir, 'assets', 'index-abc123.js'), 'console.log("hi")');
    const base = await appWith({}, dir);
    for (const path of ['/', '/login', '/alice/sales', '/alice/sales/tables/Orders%202024?x=1']) {
      const res = await fetch(`${base}${path}`, { headers: { accept: 'text/html,application/xhtml+xml' } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control'), path).toBe('no-cache');
      expect(await res.text(), path).toContain('repobase console');
    }
    const asset = await fetch(`${base}/assets/index-abc123.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    // Not a page: a missing asset, an API path, a request that does not accept HTML, a POST.
    for (const [path, accept, method] of [
      ['/assets/missing.js', '*/*', 'GET'],
      ['/api/v1beta/nothing', 'text/html', 'GET'],
      ['/alice/sales', 'application/json', 'GET'],
      ['/alice/sales', 'text/html', 'POST'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method, headers: { accept } });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((await errorOf(res)).code).toBe('42704');
    }
  });

  it('without a console build, / answers 503 saying to run npm run build; the API still works', async () => {
    const base = await appWith({}, await mkdtemp(join(tmpdir(), 'repobase-no-console-')));
    for (const accept of ['*/*', 'text/html']) {
      const res = await fetch(`${base}/`, { headers: { accept } });
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await res.text()).toContain('npm run build');
    }
    expect((await fetch(`${base}/alice/sales`, { headers: { accept: 'text/html' } })).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it.runIf(existsSync(join(CONSOLE_DIR, 'index.html')))('the built console answers client routes with its index.html', async () => {
    const res = await fetch(`${srv.httpUrl}/someone/repo`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/<div id="root">/);
  });

  it('/api/docs still loads, and the OpenAPI document has the account routes (no credentials for log-in)', async () => {
    const page = await fetch(`${srv.httpUrl}/api/docs`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger-ui-bundle.js');
    const bundle = await fetch(`${srv.httpUrl}/api/docs/static/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    const doc = (await (await fetch(`${srv.httpUrl}/api/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { tags?: string[]; security?: unknown }>>;
    };
    expect(doc.paths['/api/v1beta/auth/login']!.post).toMatchObject({ tags: ['account'], security: [] });
    expect(doc.paths['/api/v1beta/auth/signup']!.post).toMatchObject({ tags: ['account'], security: [] });
    expect(doc.paths['/api/v1beta/auth/session']!.get).toMatchObject({ tags: ['account'], security: [{ bearer: [] }] });
    expect(doc.paths['/api/v1beta/connection']!.get).toMatchObject({ tags: ['account'] });
  });
});
