/**
 * repobase on a Citus cluster (a coordinator and two workers of PostgreSQL 15 with Citus,
 * bench/lib/citus.ts) against the coordinator directly: pgbench -S and TPC-B (the pgbench tables
 * are one repo, a distributed schema living on one worker) and the REST one-row select against
 * the bare fastify+pg route on the coordinator. Ratios, as for the single cluster; the CPU per
 * request counts the coordinator's processes, not the worker's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { BIN, conninfo, createBenchUser, REPO, serviceEnv, USER, type Conn } from '../env.js';
import { startCitus } from '../lib/citus.js';
import { freePort, run, start, waitFor } from '../lib/proc.js';
import { BARE_BODY, measure, startBare, type RestOptions, type RestResult } from './rest.js';
import { interleave, WIRE_SCENARIOS, type WireOptions, type WireResult } from './wire.js';

export interface CitusResult {
  workers: number;
  /** Where the pgbench repo lives. */
  repoNode: string;
  wire: WireResult[];
  rest: RestResult['targets'];
}

const SCENARIOS = WIRE_SCENARIOS.filter((s) => !s.tls && (s.name === 'pgbench -S -M simple' || s.name === 'pgbench -S -M extended' || s.name === 'pgbench TPC-B -M simple'));

export async function runCitus(opts: { wire: WireOptions; rest: RestOptions; scale: number }, log: (s: string) => void): Promise<CitusResult> {
  log('starting a Citus cluster (coordinator + 2 workers)');
  const citus = await startCitus({ workers: 2, database: 'bench' });
  const dir = await mkdtemp(join(tmpdir(), 'repobase-bench-citus-'));
  const stops: (() => Promise<void>)[] = [() => citus.stop(), () => rm(dir, { recursive: true, force: true })];
  try {
    const env = serviceEnv(citus.url(), join(dir, 'repobase'));
    const key = await createBenchUser(env);
    const [httpPort, wirePort] = [await freePort(), await freePort()];
    const service = start('repobase', process.execPath, [BIN, 'serve'], { ...env, REPOBASE_HTTP_PORT: String(httpPort), REPOBASE_PG_PORT: String(wirePort), REPOBASE_WORKERS: '0' });
    stops.push(service.stop);
    const httpUrl = `http://127.0.0.1:${httpPort}`;
    await waitFor('repobase on Citus', async () => service.output().includes('repobase is running') && (await fetch(`${httpUrl}/healthz`)).ok, 60_000);

    const admin = new pg.Client({ connectionString: citus.url() });
    await admin.connect();
    stops.push(() => admin.end());
    // The direct target sees the pgbench tables unqualified, as repobase's database name does.
    await admin.query(`ALTER ROLE ${USER} SET search_path = "${REPO}"`);
    const repobase: Conn = { host: '127.0.0.1', port: wirePort, user: USER, password: key, dbname: REPO };
    const direct: Conn = { host: citus.coordinator.host, port: citus.coordinator.port, user: USER, password: 'trusted', dbname: citus.database };
    log(`pgbench -i -s ${opts.scale} through repobase on Citus`);
    const init = await run('pgbench', ['-i', '-s', String(opts.scale), '-q', conninfo(repobase)]);
    if (init.code !== 0) throw new Error(`pgbench -i on Citus failed: ${init.stderr}`);
    const placed = await admin.query<{ node: string }>(
      `SELECT DISTINCT s.nodename || ':' || s.nodeport AS node FROM citus_shards s WHERE s.table_name::text LIKE '"${REPO}".%'`,
    );

    const wire = await interleave(direct, SCENARIOS, () => [['Citus coordinator direct', direct], ['repobase on Citus', repobase]], opts.wire, log);

    const postgresPid = await citus.postmasterPid();
    const bare = await startBare({ direct }, 1);
    stops.push(bare.stop);
    const pid = service.child.pid!;
    const rest = await measure(
      { postgresPid },
      [
        { name: 'bare fastify+pg on the coordinator', url: bare.url, headers: {}, body: BARE_BODY, pid: bare.pid },
        {
          name: 'repobase on Citus',
          url: `${httpUrl}/api/v1beta/query/`,
          headers: { authorization: `Bearer ${key}` },
          body: JSON.stringify({ query_string: `SELECT abalance FROM "${REPO}".pgbench_accounts WHERE aid = 4242` }),
          pid,
        },
      ],
      opts.rest,
      log,
      ' on Citus',
    );
    return { workers: citus.workers.length, repoNode: placed.rows.map((r) => r.node).join(', '), wire, rest };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}
