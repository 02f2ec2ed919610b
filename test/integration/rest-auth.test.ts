/**
 * Bearer authentication, API keys over REST, and the log: keys never appear in it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let alice: { name: string; key: string };
let bob: { name: string; key: string };

beforeAll(async () => {
  srv = await startRest({ captureLogs: true });
  alice = await srv.user('alice');
  bob = await srv.user('bob');
});

afterAll(async () => {
  await srv?.stop();
});

async function errorOf(res: Response): Promise<{ code: string; message: string; hint: string | null }> {
  return ((await res.json()) as { error: { code: string; message: string; hint: string | null } }).error;
}

describe('authentication', () => {
  it('a missing key is 401 28000 with WWW-Authenticate: Bearer, on every API route', async () => {
    for (const [method, path] of [
      ['GET', '/repos/'],
      ['POST', '/query/'],
      ['GET', '/keys/'],
      ['GET', `/repos/${alice.name}/x/`],
    ] as const) {
      const r = await srv.call(undefined, method, path, method === 'POST' ? { query_string: 'SELECT 1' } : undefined);
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="repobase"');
      expect(await errorOf(r)).toMatchObject({ code: '28000', message: 'no API key' });
    }
  });

  it('a malformed Authorization header is 401 28000', async () => {
    for (const header of ['Basic YWxpY2U6c2VjcmV0', 'Bearer', 'Bearer ', `Token ${alice.key}`, `Bearer ${alice.key} extra`]) {
      const r = await fetch(`${srv.url}/api/v1beta/repos/`, { headers: { authorization: header } });
      expect(r.status, header).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await errorOf(r)).code).toBe('28000');
    }
  });

  it('a wrong key is 401 28P01 with error="invalid_token"', async () => {
    const parts = /^rb_([0-9a-f]{12})_(.+)$/.exec(alice.key)!;
    for (const key of ['rb_000000000000_' + 'A'.repeat(43), `rb_${parts[1]}_${'B'.repeat(43)}`, 'not-a-key']) {
      const r = await srv.call(key, 'GET', '/repos/');
      expect(r.status, key).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="repobase", error="invalid_token"');
      expect(await errorOf(r)).toMatchObject({ code: '28P01', message: 'invalid API key' });
    }
  });

  it('the health check needs no key', async () => {
    const r = await fetch(`${srv.url}/healthz`);
    expect(r.status).toBe(200);
  });

  it('answers with a request id header, and takes the caller\'s one', async () => {
    const r = await srv.call(alice.key, 'GET', '/repos/', undefined, { 'x-request-id': 'trace-me-42' });
    expect(r.headers.get('x-request-id')).toBe('trace-me-42');
    const r2 = await srv.call(alice.key, 'GET', '/repos/');
    expect(r2.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('API keys over REST', () => {
  it('creates a key shown once (201), lists keys without secrets, revokes (204) and the key stops working', async () => {
    const created = await srv.call(alice.key, 'POST', '/keys/');
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const key = (await created.json()) as { id: string; prefix: string; key: string };
    expect(key.key).toMatch(/^rb_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(key.prefix).toBe(`rb_${key.id}`);
    expect((await srv.call(key.key, 'GET', '/repos/')).status).toBe(200);

    const listed = await srv.call(alice.key, 'GET', '/keys/');
    const text = await listed.text();
    const keys = (JSON.parse(text) as { keys: { id: string; prefix: string; created_at: string; last_used_at: string | null }[] }).keys;
    expect(keys.map((k) => k.id)).toContain(key.id);
    expect(keys).toHaveLength(2);
    expect(text).not.toContain(key.key.slice(`rb_${key.id}_`.length));
    expect(text).not.toContain(alice.key.slice(16));
    expect(Object.keys(keys[0]!).sort()).toEqual(['access', 'created_at', 'expired', 'expires_at', 'id', 'last_used_at', 'name', 'prefix', 'repos']);

    const revoked = await srv.call(alice.key, 'DELETE', `/keys/${key.id}`);
    expect(revoked.status).toBe(204);
    const after = await srv.call(key.key, 'GET', '/repos/');
    expect(after.status).toBe(401);
    expect((await errorOf(after)).code).toBe('28P01');
    expect((await srv.call(alice.key, 'DELETE', `/keys/${key.id}`)).status).toBe(404);
  });

  it("cannot revoke another user's key: 404 like an unknown id", async () => {
    const bobKeyId = /^rb_([0-9a-f]{12})_/.exec(bob.key)![1]!;
    const r = await srv.call(alice.key, 'DELETE', `/keys/${bobKeyId}`);
    expect(r.status).toBe(404);
    expect((await errorOf(r)).code).toBe('42704');
    expect((await srv.call(bob.key, 'GET', '/repos/')).status).toBe(200);
    expect((await srv.call(alice.key, 'DELETE', '/keys/000000000000')).status).toBe(404);
  });
});

describe('the log', () => {
  it('never contains an API key, valid, wrong or revoked, while it does record the requests', async () => {
    const wrong = 'rb_0123456789ab_' + 'W'.repeat(43);
    await srv.call(alice.key, 'GET', '/repos/');
    await srv.query(alice.key, "SELECT 'hello from the log test'");
    await srv.call(wrong, 'GET', '/repos/');
    await fetch(`${srv.url}/api/v1beta/repos/`, { headers: { authorization: `Basic ${alice.key}` } });
    await srv.call(bob.key, 'POST', '/query/', { query_string: 'SELECT 1/0' });
    const log = srv.logs.join('');
    expect(log).toContain('hello from the log test'); // the debug line of the statement: the log was captured
    expect(log).toContain(/^rb_([0-9a-f]{12})_/.exec(alice.key)![1]); // the key id is fine to log
    for (const key of [alice.key, bob.key, wrong]) {
      expect(log).not.toContain(key);
      expect(log).not.toContain(key.slice(16)); // nor the secret part alone
    }
  });
});
