import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane } from '../../src/control/control-plane.js';
import { keyDdlInstalled, migrate, schemaEventsInstalled } from '../../src/control/migrations.js';
import { testEnv, type TestEnv } from '../helpers/cluster.js';

/** Every migration the service has, in order: a new one is added here on purpose. */
const ALL_MIGRATIONS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

let env: TestEnv;

beforeAll(async () => {
  env = await testEnv();
});
afterAll(async () => {
  await env.close();
});

describe('migrations', () => {
  it('are idempotent and safe when instances start at once', async () => {
    const results = await Promise.all([1, 2, 3].map(() => migrate(env.cluster.admin)));
    expect(results.flat()).toEqual([]);
    const res = await env.cluster.admin.query('SELECT version FROM _repobase.migrations ORDER BY version');
    expect(res.rows.map((r: { version: number }) => r.version)).toEqual(ALL_MIGRATIONS);
  });

  it('apply every migration exactly once on a fresh database, even concurrently', async () => {
    const other = await testEnvFresh();
    try {
      const results = await Promise.all([1, 2, 3, 4].map(() => migrate(other)));
      expect(results.flat()).toEqual(ALL_MIGRATIONS);
      expect(await schemaEventsInstalled(other)).toBe(true);
    } finally {
      await other.end();
    }
  });

  it('apply without a superuser, leaving out only the event triggers of live schema events', async () => {
    const url = new URL(await testEnvFreshUrl());
    const role = env.name('nosuper');
    const password = 'not-a-superuser';
    const database = url.pathname.slice(1);
    await env.cluster.admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}' NOSUPERUSER`);
    // The owner of the database (and so of its public schema) without being a superuser, as on a managed cluster.
    const owner = new pg.Client({ connectionString: url.toString() });
    await owner.connect();
    await owner.query(`ALTER DATABASE ${database} OWNER TO ${role}`);
    await owner.end();
    url.username = role;
    url.password = password;
    const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
    try {
      expect(await migrate(pool)).toEqual(ALL_MIGRATIONS);
      expect(await schemaEventsInstalled(pool)).toBe(false);
      expect(await keyDdlInstalled(pool)).toBe(false);
      const fn = await pool.query("SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'notify_schema_change'");
      expect(fn.rows[0].n).toBe(1);
    } finally {
      await pool.end();
    }
  });
});

async function testEnvFreshUrl(): Promise<string> {
  const { createTestDatabase } = await import('../helpers/cluster.js');
  return createTestDatabase();
}

async function testEnvFresh(): Promise<pg.Pool> {
  return new pg.Pool({ connectionString: await testEnvFreshUrl(), max: 4 });
}

describe('users and API keys', () => {
  it('creates a user with a key that authenticates to that user', async () => {
    const alice = env.name('alice');
    const { key, id } = await env.control.createUser(alice);
    expect(key).toMatch(/^rb_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(key.startsWith(`rb_${id}_`)).toBe(true);
    expect(await env.control.keys.authenticate(key)).toMatchObject({ user: alice, keyId: id, role: alice, key: { access: 'full', repos: null, expiresAt: null } });
  });

  it('stores no secret: only a hash and a SCRAM verifier', async () => {
    const u = env.name('hashonly');
    const { key, id } = await env.control.createUser(u);
    const secret = key.slice(`rb_${id}_`.length);
    const dump = await env.cluster.admin.query('SELECT row_to_json(k)::text AS j FROM _repobase.api_keys k WHERE id = $1', [id]);
    const text = String(dump.rows[0].j);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(Buffer.from(secret).toString('hex'));
  });

  it('rejects malformed, unknown, wrong and revoked keys with 28P01', async () => {
    const u = env.name('revoker');
    const first = await env.control.createUser(u);
    const second = await env.control.keys.create(u);
    expect((await env.control.keys.list(u)).map((k) => k.id).sort()).toEqual([first.id, second.id].sort());
    const wrongSecret = first.key.slice(0, -4) + (first.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const bad of ['', 'nope', 'rb_000000000000_' + 'A'.repeat(43), wrongSecret]) {
      await expect(env.control.keys.authenticate(bad)).rejects.toMatchObject({ code: '28P01' });
    }
    expect((await env.control.keys.authenticate(first.key)).user).toBe(u);
    // Matched once, the cached key is checked against the secret's bytes: still only the right one passes.
    await expect(env.control.keys.authenticate(wrongSecret)).rejects.toMatchObject({ code: '28P01' });
    expect((await env.control.keys.authenticate(first.key)).user).toBe(u);
    await env.control.keys.revoke(first.id);
    await expect(env.control.keys.authenticate(first.key)).rejects.toMatchObject({ code: '28P01' });
    expect((await env.control.keys.authenticate(second.key)).user).toBe(u);
    expect((await env.control.keys.list(u)).map((k) => k.id)).toEqual([second.id]);
  });

  it('a key revoked through another instance stops working here as soon as the change commits', async () => {
    const u = env.name('crossinst');
    const k = await env.control.createUser(u);
    expect((await env.control.keys.authenticate(k.key)).user).toBe(u); // now cached here
    const other = await ControlPlane.open(env.cluster, env.log, { listen: false });
    await other.keys.revoke(k.id);
    await other.close();
    await expect.poll(() => env.control.keys.authenticate(k.key).then(() => 'ok', (e: { code: string }) => e.code), { timeout: 2000, interval: 20 }).toBe('28P01');
  });

  it('records last use without a write per request', async () => {
    const u = env.name('lastused');
    const k = await env.control.createUser(u);
    expect((await env.control.keys.list(u))[0]?.lastUsedAt).toBeNull();
    for (let i = 0; i < 5; i++) await env.control.keys.authenticate(k.key);
    expect((await env.control.keys.list(u))[0]?.lastUsedAt).toBeNull(); // batched, not written yet
    await env.control.close(); // flushes
    env.control = await ControlPlane.open(env.cluster, env.log, { listen: true });
    expect((await env.control.keys.list(u))[0]?.lastUsedAt).toBeInstanceOf(Date);
  });

  it('refuses invalid and duplicate user names', async () => {
    for (const bad of ['Bob', 'pg_x', 'postgres', 'a'.repeat(40), 'x', '1abc', 'has-dash']) {
      await expect(env.control.createUser(bad)).rejects.toMatchObject({ code: '42602' });
    }
    const u = env.name('dup');
    await env.control.createUser(u);
    await expect(env.control.createUser(u)).rejects.toMatchObject({ code: '42710', message: `user "${u}" already exists` });
  });

  it('deleting a user drops its repos, keys and role', async () => {
    const u = env.name('leaver');
    const k = await env.control.createUser(u);
    await env.control.createRepo({ owner: u, repo: 'data' });
    await env.control.deleteUser(u);
    await expect(env.control.keys.authenticate(k.key)).rejects.toMatchObject({ code: '28P01' });
    const role = await env.cluster.admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [u]);
    expect(role.rowCount).toBe(0);
    const schema = await env.cluster.admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [`${u}/data`]);
    expect(schema.rowCount).toBe(0);
  });
});

describe('repos and rights', () => {
  it('computes each user\'s rights: own, collaborations, public repos', async () => {
    const a = env.name('ra');
    const b = env.name('rb');
    await env.control.createUser(a);
    await env.control.createUser(b);
    await env.control.createRepo(`${a}/own`);
    await env.control.createRepo(`${b}/priv`);
    await env.control.createRepo(`${b}/pub`, { isPrivate: false });
    await env.control.createRepo(`${b}/collab`);
    expect((await env.control.rights(a)).repos).toEqual(new Map([[`${a}/own`, 'own'], [`${b}/pub`, 'read']]));
    await env.control.setCollaborator({ owner: b, repo: 'collab' }, a, 'write');
    expect((await env.control.rights(a)).repos.get(`${b}/collab`)).toBe('write');
    await env.control.setCollaborator({ owner: b, repo: 'pub' }, a, 'write');
    expect((await env.control.rights(a)).repos.get(`${b}/pub`)).toBe('write');
    await env.control.deleteRepo({ owner: b, repo: 'collab' });
    expect((await env.control.rights(a)).repos.has(`${b}/collab`)).toBe(false);
  });

  it('refuses bad and duplicate repo names', async () => {
    const a = env.name('rn');
    await env.control.createUser(a);
    await expect(env.control.createRepo(`${a}/bad name`)).rejects.toMatchObject({ code: '42602' });
    await expect(env.control.createRepo(`${a}/..`)).rejects.toMatchObject({ code: '42602' });
    await env.control.createRepo(`${a}/ok.name-1_x`);
    await expect(env.control.createRepo(`${a}/ok.name-1_x`)).rejects.toMatchObject({ code: '42P06' });
    await expect(env.control.createRepo(`${env.name('nobody')}/x`)).rejects.toMatchObject({ code: '42704' });
  });

  it('deletes a repo with its data in one transaction', async () => {
    const a = env.name('rd');
    await env.control.createUser(a);
    await env.control.createRepo(`${a}/gone`);
    const db = new pg.Client(env.cluster.roleConnection(a));
    await db.connect();
    await db.query(`CREATE TABLE "${a}/gone".t (id int)`);
    await db.end();
    await env.control.deleteRepo({ owner: a, repo: 'gone' });
    expect(await env.control.getRepo({ owner: a, repo: 'gone' })).toBeUndefined();
    const schema = await env.cluster.admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [`${a}/gone`]);
    expect(schema.rowCount).toBe(0);
    await expect(env.control.deleteRepo({ owner: a, repo: 'gone' })).rejects.toMatchObject({ code: '3F000' });
  });
});
