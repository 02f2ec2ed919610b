/**
 * REST: `POST /api/v1beta/query/` with a one-row indexed select, keep-alive, 32 connections,
 * against the bare fastify+pg route (bench/bare-rest.ts) with the same query on the same role —
 * each with as many processes as repobase ships with here, and each as a single process.
 */
import autocannon from 'autocannon';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import type { BenchEnv } from '../env.js';
import { freePort, start, waitFor } from '../lib/proc.js';
import { summarize, type Summary } from '../lib/stats.js';
import { POOL_SIZE } from '../env.js';

export interface RestResult {
  targets: Record<string, { rps: Summary; p50: Summary; p99: Summary; errors: number }>;
}

const QUERY = 'SELECT abalance FROM pgbench_accounts WHERE aid = 4242';

async function load(url: string, headers: Record<string, string>, body: string, seconds: number): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const result = await autocannon({ url, method: 'POST', connections: 32, duration: seconds, headers: { 'content-type': 'application/json', ...headers }, body });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

export async function runRest(env: BenchEnv, opts: { rounds: number; seconds: number }, log: (s: string) => void): Promise<RestResult> {
  const { host, port: pgPort, user, password, dbname } = env.direct;
  const url = `postgresql://${user}:${encodeURIComponent(password)}@${host}:${pgPort}/${dbname}`;
  const body = JSON.stringify({ query_string: QUERY });
  const bares: { url: string; stop: () => Promise<void> }[] = [];
  try {
    for (const processes of [env.repobase.workers, 1]) {
      const port = await freePort();
      const bare = start('bare-rest', process.execPath, [join(packageRoot, 'dist', 'bench', 'bare-rest.js'), String(port), url, String(POOL_SIZE), String(processes)], process.env);
      bares.push({ url: `http://127.0.0.1:${port}/query`, stop: bare.stop });
      await waitFor('bare fastify route', async () => (await fetch(bares.at(-1)!.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).ok);
    }
    const auth = { authorization: `Bearer ${env.repobase.key}` };
    const ours = JSON.stringify({ query_string: `SELECT abalance FROM "bench/pgbench".pgbench_accounts WHERE aid = 4242` });
    const targets: [string, string, Record<string, string>, string][] = [
      ['bare fastify+pg', bares[0]!.url, {}, body],
      ['repobase', `${env.repobase.httpUrl}/api/v1beta/query/`, auth, ours],
      ['bare fastify+pg 1 process', bares[1]!.url, {}, body],
      ['repobase 1 process', `${env.single.httpUrl}/api/v1beta/query/`, auth, ours],
    ];
    const samples = new Map(targets.map(([n]) => [n, { rps: [] as number[], p50: [] as number[], p99: [] as number[], errors: 0 }]));
    for (let round = 0; round < opts.rounds; round++) {
      for (const [name, target, headers, b] of targets) {
        const r = await load(target, headers, b, opts.seconds);
        const s = samples.get(name)!;
        s.rps.push(r.rps);
        s.p50.push(r.p50);
        s.p99.push(r.p99);
        s.errors += r.errors;
        log(`REST round ${round + 1} ${name}: ${r.rps.toFixed(0)} req/s${r.errors ? `, ${r.errors} errors` : ''}`);
      }
    }
    return { targets: Object.fromEntries([...samples].map(([n, s]) => [n, { rps: summarize(s.rps), p50: summarize(s.p50), p99: summarize(s.p99), errors: s.errors }])) };
  } finally {
    for (const bare of bares) await bare.stop();
  }
}
