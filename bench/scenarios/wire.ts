/**
 * pgbench through each target, interleaved (A B C A B C …) so that the machine's noise falls on
 * every target alike; the ratios of medians are what the report states.
 */
import { conninfo, type BenchEnv, type Conn } from '../env.js';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import { freePort, run, start, waitFor } from '../lib/proc.js';
import { summarize, type Summary } from '../lib/stats.js';

export interface WireScenario {
  name: string;
  args: string[];
  tls: boolean;
}

export const WIRE_SCENARIOS: WireScenario[] = [
  { name: 'pgbench -S -M prepared', args: ['-S', '-M', 'prepared'], tls: false },
  { name: 'pgbench -S -M simple', args: ['-S', '-M', 'simple'], tls: false },
  { name: 'pgbench -S -M extended', args: ['-S', '-M', 'extended'], tls: false },
  { name: 'pgbench TPC-B -M simple', args: ['-M', 'simple'], tls: false },
  { name: 'pgbench -S -M prepared, TLS', args: ['-S', '-M', 'prepared'], tls: true },
];

export interface TargetResult {
  tps: Summary;
  latencyMs: Summary;
}

export interface WireResult {
  scenario: string;
  targets: Record<string, TargetResult>;
}

async function pgbench(conn: Conn, scenario: WireScenario, seconds: number, clients: number): Promise<{ tps: number; latency: number }> {
  const r = await run('pgbench', [...scenario.args, '-c', String(clients), '-j', '2', '-T', String(seconds), '-n', conninfo(conn, scenario.tls ? 'require' : 'disable')]);
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(r.stdout)?.[1]);
  const latency = Number(/latency average = ([\d.]+) ms/.exec(r.stdout)?.[1]);
  const failed = Number(/number of failed transactions: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  if (r.code !== 0 || !Number.isFinite(tps) || failed > 0) {
    throw new Error(`pgbench ${scenario.name} failed (exit ${r.code}, ${failed} failed):\n${r.stderr.slice(-2000)}`);
  }
  return { tps, latency };
}

export async function initPgbench(env: BenchEnv, scale: number): Promise<void> {
  const r = await run('pgbench', ['-i', '-s', String(scale), '-q', conninfo(env.repobase)]);
  if (r.code !== 0) throw new Error(`pgbench -i failed: ${r.stderr}`);
}

/** Name of the reference target: a bare Node relay (bench/bare-relay.ts), the ceiling of any proxy in Node. */
export const BARE_RELAY = 'bare Node relay';

export async function runWire(env: BenchEnv, opts: { rounds: number; seconds: number; clients: number }, log: (s: string) => void): Promise<WireResult[]> {
  const relayPort = await freePort();
  const relay = start('bare-relay', process.execPath, [join(packageRoot, 'dist', 'bench', 'bare-relay.js'), String(relayPort), String(env.direct.port)], process.env);
  try {
    await waitFor('bare relay', async () => (await run('psql', [conninfo({ ...env.direct, port: relayPort }), '-Atc', 'SELECT 1'])).stdout.trim() === '1');
    return await runAll(env, opts, log, { ...env.direct, port: relayPort });
  } finally {
    await relay.stop();
  }
}

async function runAll(env: BenchEnv, opts: { rounds: number; seconds: number; clients: number }, log: (s: string) => void, bareRelay: Conn): Promise<WireResult[]> {
  const targets: [string, Conn][] = [
    ['direct', env.direct],
    ...('unavailable' in env.pgbouncer ? [] : ([['pgbouncer', env.pgbouncer]] as [string, Conn][])),
    ['repobase', env.repobase],
    ['repobase 1 process', env.single],
    [BARE_RELAY, bareRelay],
  ];
  const results: WireResult[] = [];
  for (const scenario of WIRE_SCENARIOS) {
    // TLS: the bare relay would only pass the direct connection's TLS through.
    const use = scenario.tls ? targets.filter(([n]) => n !== 'direct' && n !== BARE_RELAY) : targets;
    const samples = new Map(use.map(([n]) => [n, { tps: [] as number[], lat: [] as number[] }]));
    for (let round = 0; round < opts.rounds; round++) {
      for (const [name, conn] of use) {
        const r = await pgbench(conn, scenario, opts.seconds, opts.clients);
        samples.get(name)!.tps.push(r.tps);
        samples.get(name)!.lat.push(r.latency);
        log(`${scenario.name} round ${round + 1} ${name}: ${r.tps.toFixed(0)} tps`);
      }
    }
    results.push({
      scenario: scenario.name,
      targets: Object.fromEntries([...samples].map(([n, s]) => [n, { tps: summarize(s.tps), latencyMs: summarize(s.lat) }])),
    });
  }
  return results;
}
