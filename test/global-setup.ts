/**
 * Provides a real Postgres to every test file: `REPOBASE_TEST_PG_URL` when set (a superuser URL),
 * else a `postgres:17` container when a Docker engine answers, else an embedded cluster started
 * here in a temporary data dir (the path CI takes: no Docker engine runs there).
 */
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import { request } from 'node:http';
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
  if (await dockerAnswers()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:17').start();
    project.provide('pgAdminUrl', container.getConnectionUri());
    return async () => {
      await container.stop();
    };
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

/** Whether a Docker engine answers on its socket (DOCKER_HOST=unix://… or the default one). */
function dockerAnswers(): Promise<boolean> {
  const host = process.env.DOCKER_HOST;
  if (host && !host.startsWith('unix://')) return Promise.resolve(false);
  const socketPath = host ? host.slice('unix://'.length) : '/var/run/docker.sock';
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}
