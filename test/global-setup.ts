/**
 * Provides a real Postgres to every test file: `REPOBASE_TEST_PG_URL` when set (a superuser URL),
 * else an embedded cluster started here in a temporary data dir. No Docker engine runs on the
 * machines this project is built on, so the embedded cluster is the default path.
 */
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { createLogger } from '../src/shared/logger.js';
import { startEmbedded } from '../src/upstream/embedded.js';
import { freePort } from './helpers/ports.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.REPOBASE_TEST_PG_URL;
  if (given) {
    project.provide('pgAdminUrl', given);
    return async () => undefined;
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'repobase-test-pg-'));
  await chmod(dataDir, 0o755);
  const cluster = await startEmbedded({ dataDir, port: await freePort(), database: 'postgres', log: createLogger('warn') });
  project.provide('pgAdminUrl', cluster.adminUrl);
  return async () => {
    await cluster.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
