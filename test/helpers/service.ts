/**
 * A whole repobase service in the test process, on a fresh database of the test cluster, with
 * OS-chosen ports: what a user reaches with psql, drivers and curl.
 */
import { startService, type Service } from '../../src/main.js';
import type { Config } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { testConfig } from './cluster.js';

export interface TestService extends Service {
  config: Config;
  /** Creates a user; returns its name (made unique) and first API key. */
  user(base: string): Promise<{ name: string; key: string }>;
  /** Connection settings for `pg` / `postgres` as `user` with `key`. */
  pgOptions(user: string, key: string, database?: string): { host: string; port: number; user: string; password: string; database: string };
  /** libpq connection URL (psql, pgbench). */
  pgUrl(user: string, key: string, database?: string, query?: string): string;
}

let counter = 0;

export async function startTestService(overrides: Record<string, unknown> = {}): Promise<TestService> {
  return startTestServiceWith(await testConfig(overrides));
}

/** A whole service on `config` (any cluster: see startTestService for the usual one). */
export async function startTestServiceWith(config: Config): Promise<TestService> {
  const service = await startService(config, createLogger('warn'));
  const suffix = `${process.pid.toString(36)}${(counter++).toString(36)}${Math.random().toString(36).slice(2, 5)}`;
  const pgOptions = (user: string, key: string, database = config.serviceDatabase) => ({
    host: '127.0.0.1',
    port: service.pgPort,
    user,
    password: key,
    database,
  });
  return Object.assign(service, {
    config,
    user: async (base: string) => {
      const name = `${base}_${suffix}`;
      const { key } = await service.control.createUser(name);
      return { name, key };
    },
    pgOptions,
    pgUrl: (user: string, key: string, database = config.serviceDatabase, query = '') =>
      `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(key)}@127.0.0.1:${service.pgPort}/${encodeURIComponent(database)}${query ? '?' + query : ''}`,
  });
}
