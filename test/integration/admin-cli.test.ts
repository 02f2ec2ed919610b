import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane } from '../../src/control/control-plane.js';
import { buildApp } from '../../src/http/app.js';
import { AsyncQueries } from '../../src/http/async-queries.js';
import { createPolicy } from '../../src/policy/index.js';
import { createLogger } from '../../src/shared/logger.js';
import { openCluster, type Cluster } from '../../src/upstream/cluster.js';
import { RolePools } from '../../src/upstream/role-pools.js';
import { sessionPoolFor } from '../../src/upstream/session-pool.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/cluster.js';
import type { Config } from '../../src/shared/config.js';

let config: Config;
let env: Record<string, string>;
let cluster: Cluster;
let control: ControlPlane;
const suffix = Math.random().toString(36).slice(2, 7);
const alice = `alice_${suffix}`;

beforeAll(async () => {
  config = await testConfig();
  env = { REPOBASE_UPSTREAM_URL: config.upstreamUrl, REPOBASE_DATA_DIR: config.dataDir, REPOBASE_SECRET: config.secret };
  cluster = await openCluster(config, createLogger('silent'));
  control = await ControlPlane.open(cluster, createLogger('silent'), { listen: true });
});

afterAll(async () => {
  await control.close();
  await cluster.close();
});

describe('repobase admin commands', () => {
  it('user create prints one API key alone on stdout', async () => {
    const r = await runCli(['user', 'create', alice], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^rb_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n$/);
    expect((await control.keys.authenticate(r.stdout.trim())).user).toBe(alice);
  });

  it('key list shows ids and prefixes, never secrets; key revoke makes authenticate fail at once', async () => {
    const created = await runCli(['key', 'create', alice], env);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    const id = key.split('_')[1]!;
    expect((await control.keys.authenticate(key)).user).toBe(alice); // cached by the running instance
    const list = await runCli(['key', 'list', alice], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(id);
    expect(list.stdout).toContain(`rb_${id}`);
    expect(list.stdout).not.toContain(key.slice(`rb_${id}_`.length));
    expect(list.stdout).toMatch(/\(2 rows\)/);
    const revoked = await runCli(['key', 'revoke', id], env);
    expect(revoked.code).toBe(0);
    await expect.poll(() => control.keys.authenticate(key).then(() => 'ok', (e: { code: string }) => e.code), { timeout: 2000, interval: 20 }).toBe('28P01');
    expect((await runCli(['key', 'revoke', id], env)).code).toBe(1);
  });

  it('user list and repo create', async () => {
    const repo = await runCli(['repo', 'create', `${alice}/sales`, '--public'], env);
    expect(repo).toMatchObject({ code: 0, stdout: `${alice}/sales\n` });
    expect((await control.getRepo({ owner: alice, repo: 'sales' }))?.isPrivate).toBe(false);
    const users = await runCli(['user', 'list'], env);
    expect(users.stdout).toMatch(new RegExp(`${alice}\\s+\\|\\s+1\\s+\\|\\s+1`));
  });

  it('key create with a scope, as the operator; key list shows it', async () => {
    await control.createRepo({ owner: alice, repo: 'scoped' });
    const r = await runCli(['key', 'create', alice, '--name', 'etl', '--repo', `${alice}/scoped`, '--access', 'write'], env);
    expect(r.code, r.stderr).toBe(0);
    const principal = await control.keys.authenticate(r.stdout.trim());
    expect(principal).toMatchObject({ user: alice, role: `${alice}#${principal.keyId}`, key: { name: 'etl', access: 'write', repos: [`${alice}/scoped`] } });
    const list = await runCli(['key', 'list', alice], env);
    expect(list.stdout).toMatch(new RegExp(`${principal.keyId}\s+\| rb_${principal.keyId}\s+\| etl\s+\| write\s+\| ${alice}/scoped`));
    expect((await runCli(['key', 'create'], env)).code).toBe(2); // whose key?
    expect((await runCli(['key', 'revoke', principal.keyId], env)).code).toBe(0);
  });

  it('refuses invalid user names with exit 2 and the rule', async () => {
    for (const bad of ['Bob', 'pg_x', 'postgres', 'a'.repeat(40)]) {
      const r = await runCli(['user', 'create', bad], env);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toMatch(/invalid user name|reserved/);
    }
    const r = await runCli(['user', 'create', 'Bob'], env);
    expect(r.stderr).toContain('a lowercase letter, then lowercase letters, digits or _');
  });

  it('a duplicate user exits 1 with a message', async () => {
    const r = await runCli(['user', 'create', alice], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`ERROR 42710: user "${alice}" already exists`);
  });

  it('a bad config value exits 2 naming the key', async () => {
    const r = await runCli(['user', 'list'], { ...env, REPOBASE_EMBEDDED_PG_PORT: 'abc' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('REPOBASE_EMBEDDED_PG_PORT');
    const flag = await runCli(['user', 'list', '--log-level', 'chatty'], env);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--log-level');
  });

  it('an unreachable upstream fails fast with the reason', async () => {
    const r = await runCli(['user', 'list'], { ...env, REPOBASE_UPSTREAM_URL: 'postgresql://x:y@127.0.0.1:1/db' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot use upstream Postgres at 127\.0\.0\.1:1: .*ECONNREFUSED/);
  });

  it('user set-password reads the first line of stdin; the user then logs in over the API with it', async () => {
    const password = 'a long enough passphrase';
    const short = await runCli(['user', 'set-password', alice], env, 'too short\n');
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('at least 10 characters');
    const unknown = await runCli(['user', 'set-password', `nobody_${suffix}`], env, `${password}\n`);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`ERROR 42704: user "nobody_${suffix}" does not exist`);
    const set = await runCli(['user', 'set-password', alice], env, `${password}\r\nnot part of it\n`);
    expect(set).toMatchObject({ code: 0, stdout: '' });
    expect(set.stderr).not.toContain(password);

    const log = createLogger('silent');
    const policy = await createPolicy({ maxStatementBytes: config.maxStatementBytes });
    const pools = new RolePools({ cluster, config, log });
    const sessions = sessionPoolFor(cluster, { maxPerRole: 1, idleMs: 1000, reset: 'lazy', waitMs: 1000, log });
    const queries = await AsyncQueries.start({ cluster, control, policy, config, log });
    const app = await buildApp({ config, control, log, policy, pools, sessions, queries });
    try {
      const login = (pw: string) => app.inject({ method: 'POST', url: '/api/v1beta/auth/login', payload: { username: alice, password: pw } });
      const ok = await login(password);
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toMatchObject({ user: alice });
      expect((await login(`${password}\r`)).statusCode).toBe(401);
    } finally {
      await app.close();
      await queries.close();
      sessions.close();
      await pools.close();
      await policy.close();
    }
  });

  it('unknown commands are usage errors', async () => {
    expect((await runCli(['frobnicate'], env)).code).toBe(2);
    expect((await runCli(['user'], env)).code).toBe(2);
  });
});
