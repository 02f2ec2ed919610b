/**
 * REST: `POST /api/v1beta/query/` with a one-row indexed select, keep-alive, 32 connections,
 * against the bare fastify+pg route (bench/bare-rest.ts) with the same query on the same role —
 * each with as many processes as repobase ships with here, and each as a single process.
 *
 * Each run also reports the CPU spent per request by the service's processes, by Postgres and by
 * the load generator (autocannon runs in this process): on a machine whose cores they share, the
 * ratio of two routes follows the ratio of their total CPU per request.
 */
import autocannon from 'autocannon';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import type { BenchEnv } from '../env.js';
import { cpuMicrosOf, freePort, start, waitFor } from '../lib/proc.js';
import { summarize, type Summary } from '../lib/stats.js';
import { POOL_SIZE } from '../env.js';

/** CPU µs per request, by whom. */
export interface RestCpu {
  service: Summary;
  postgres: Summary;
  loadGenerator: Summary;
}

export interface RestResult {
  targets: Record<string, { rps: Summary; p50: Summary; p99: Summary; errors: number; cpu: RestCpu }>;
}

const QUERY = 'SELECT abalance FROM pgbench_accounts WHERE aid = 4242';

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  cpu: { service: number; postgres: number; loadGenerator: number };
}

async function load(url: string, headers: Record<string, string>, body: string, seconds: number, pids: { service: number; postgres: number }): Promise<Load> {
  const before = { service: cpuMicrosOf(pids.service), postgres: cpuMicrosOf(pids.postgres), own: process.cpuUsage() };
  const result = await autocannon({ url, method: 'POST', connections: 32, duration: seconds, headers: { 'content-type': 'application/json', ...headers }, body });
  const own = process.cpuUsage(before.own);
  const n = Math.max(1, result.requests.total);
  const cpu = {
    service: (cpuMicrosOf(pids.service) - before.service) / n,
    postgres: (cpuMicrosOf(pids.postgres) - before.postgres) / n,
    loadGenerator: (own.user + own.system) / n,
  };
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, cpu };
}

export async function runRest(env: BenchEnv, opts: { rounds: number; seconds: number }, log: (s: string) => void): Promise<RestResult> {
  const { host, port: pgPort, user, password, dbname } = env.direct;
  const url = `postgresql://${user}:${encodeURIComponent(password)}@${host}:${pgPort}/${dbname}`;
  const body = JSON.stringify({ query_string: QUERY });
  const bares: { url: string; pid: number; stop: () => Promise<void> }[] = [];
  try {
    for (const processes of [env.repobase.workers, 1]) {
      const port = await freePort();
      const bare = start('bare-rest', process.execPath, [join(packageRoot, 'dist', 'bench', 'bare-rest.js'), String(port), url, String(POOL_SIZE), String(processes)], process.env);
      bares.push({ url: `http://127.0.0.1:${port}/query`, pid: bare.child.pid!, stop: bare.stop });
      await waitFor('bare fastify route', async () => (await fetch(bares.at(-1)!.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).ok);
    }
    const auth = { authorization: `Bearer ${env.repobase.key}` };
    const ours = JSON.stringify({ query_string: `SELECT abalance FROM "bench/pgbench".pgbench_accounts WHERE aid = 4242` });
    const targets: [string, string, Record<string, string>, string, number][] = [
      ['bare fastify+pg', bares[0]!.url, {}, body, bares[0]!.pid],
      ['repobase', `${env.repobase.httpUrl}/api/v1beta/query/`, auth, ours, env.repobase.pid],
      ['bare fastify+pg 1 process', bares[1]!.url, {}, body, bares[1]!.pid],
      ['repobase 1 process', `${env.single.httpUrl}/api/v1beta/query/`, auth, ours, env.single.pid],
    ];
    const samples = new Map(targets.map(([n]) => [n, { runs: [] as Load[], errors: 0 }]));
    for (let round = 0; round < opts.rounds; round++) {
      for (const [name, target, headers, b, pid] of targets) {
        const r = await load(target, headers, b, opts.seconds, { service: pid, postgres: env.postgresPid });
        const s = samples.get(name)!;
        s.runs.push(r);
        s.errors += r.errors;
        const cpu = `CPU µs/request: service ${r.cpu.service.toFixed(0)}, Postgres ${r.cpu.postgres.toFixed(0)}, load generator ${r.cpu.loadGenerator.toFixed(0)}`;
        log(`REST round ${round + 1} ${name}: ${r.rps.toFixed(0)} req/s${r.errors ? `, ${r.errors} errors` : ''}; ${cpu}`);
      }
    }
    const of = (runs: Load[], pick: (r: Load) => number) => summarize(runs.map(pick));
    return {
      targets: Object.fromEntries(
        [...samples].map(([n, { runs, errors }]) => [
          n,
          {
            rps: of(runs, (r) => r.rps),
            p50: of(runs, (r) => r.p50),
            p99: of(runs, (r) => r.p99),
            errors,
            cpu: { service: of(runs, (r) => r.cpu.service), postgres: of(runs, (r) => r.cpu.postgres), loadGenerator: of(runs, (r) => r.cpu.loadGenerator) },
          },
        ]),
      ),
    };
  } finally {
    for (const bare of bares) await bare.stop();
  }
}
