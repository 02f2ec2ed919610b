/**
 * Idle connections: N authenticated wire clients on repobase (all its workers); its RSS growth per
 * connection, and whether a query on a fresh connection still answers.
 */
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import { conninfo, type BenchEnv } from '../env.js';
import { rssOf, run, start, waitFor } from '../lib/proc.js';

export interface ConnectionsResult {
  connections: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  bytesPerConnection: number;
  secondsToOpen: number;
  freshQueryAnswers: boolean;
}

export async function runConnections(env: BenchEnv, count: number, log: (s: string) => void): Promise<ConnectionsResult> {
  const warm = await run('psql', [conninfo(env.repobase), '-Atc', 'SELECT 1']);
  if (warm.stdout.trim() !== '1') throw new Error(`repobase does not answer: ${warm.stderr}`);
  await new Promise((r) => setTimeout(r, 1000));
  const before = rssOf(env.repobase.pid);
  const clients = start('idle-clients', process.execPath, [join(packageRoot, 'dist', 'bench', 'idle-clients.js'), String(env.repobase.port), env.repobase.user, env.repobase.key, env.repobase.dbname, String(count)], process.env);
  try {
    let ready = '';
    await waitFor(`${count} idle connections`, async () => {
      ready = /ready (\d+) (\d+)/.exec(clients.output())?.[0] ?? '';
      return ready !== '' || clients.child.exitCode !== null;
    }, 600_000);
    if (!ready) throw new Error(`the idle clients failed: ${clients.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 2000));
    const after = rssOf(env.repobase.pid);
    const fresh = await run('psql', [conninfo(env.repobase), '-Atc', 'SELECT 42']);
    const [, opened, ms] = /ready (\d+) (\d+)/.exec(ready)!;
    log(`${opened} idle connections: ${((after - before) / Number(opened)).toFixed(0)} bytes each`);
    return {
      connections: Number(opened),
      rssBeforeMb: before / 2 ** 20,
      rssAfterMb: after / 2 ** 20,
      bytesPerConnection: (after - before) / Number(opened),
      secondsToOpen: Number(ms) / 1000,
      freshQueryAnswers: fresh.stdout.trim() === '42',
    };
  } finally {
    await clients.stop();
  }
}
