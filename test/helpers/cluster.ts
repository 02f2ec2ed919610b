/**
 * Per-test-file upstream: a fresh database on the shared test cluster, a control plane on it,
 * and unique user names (roles are cluster-wide, so files running in parallel must not collide).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { ControlPlane } from '../../src/control/control-plane.js';
import { loadConfig, type Config } from '../../src/shared/config.js';
import { createLogger, type Logger } from '../../src/shared/logger.js';
import { openCluster, type Cluster } from '../../src/upstream/cluster.js';

export interface TestEnv {
  config: Config;
  cluster: Cluster;
  control: ControlPlane;
  log: Logger;
  /** `alice` → `alice_k3x9q` (unique in the cluster). */
  name(base: string): string;
  /** URL of the test database as `role` logging in with `password`. */
  urlAs(role: string, password: string): string;
  close(): Promise<void>;
}

/** Creates an empty database on the test cluster; returns its admin URL. */
export async function createTestDatabase(): Promise<string> {
  const adminUrl = inject('pgAdminUrl');
  const db = `test_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${db}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${db}`;
  return url.toString();
}

/** Config for a repobase instance on a fresh test database, with ports chosen by the OS. */
export async function testConfig(overrides: Record<string, unknown> = {}): Promise<Config> {
  const upstreamUrl = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'repobase-test-data-'));
  return loadConfig({}, {
    upstreamUrl,
    dataDir,
    httpPort: 0,
    pgPort: 0,
    logLevel: 'warn',
    secret: randomBytes(16).toString('hex'),
    ...overrides,
  });
}

export async function testEnv(opts: { listen?: boolean } = {}): Promise<TestEnv> {
  const config = await testConfig();
  const log = createLogger('warn');
  const cluster = await openCluster(config, log);
  const control = await ControlPlane.open(cluster, log, { listen: opts.listen ?? true });
  const suffix = randomBytes(3).toString('hex');
  return {
    config,
    cluster,
    control,
    log,
    name: (base) => `${base}_${suffix}`,
    urlAs: (role, password) => {
      const url = new URL(config.upstreamUrl);
      url.username = role;
      url.password = encodeURIComponent(password);
      return url.toString();
    },
    close: async () => {
      await control.close();
      await cluster.close();
    },
  };
}
