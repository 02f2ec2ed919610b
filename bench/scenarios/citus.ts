/**
 * repobase on a Citus cluster (a coordinator and two workers of PostgreSQL 15 with Citus,
 * bench/lib/citus.ts) against the coordinator directly: pgbench -S and TPC-B (the pgbench tables
 * are one repo, a distributed schema living on one worker) and the REST one-row select against
 * the bare fastify+pg route on the coordinator. Ratios, as for the single cluster; the CPU per
 * request counts the coordinator's processes, not the worker's. With `--against`, the other build
 * runs on a Citus cluster of its own, alike, interleaved with this one.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { BIN, conninfo, createBenchUser, REPO, serviceEnv, USER, type Conn } from '../env.js';
import { startCitus } from '../lib/citus.js';
import { freePort, run, start, waitFor } from '../lib/proc.js';
import { BARE_BODY, measure, REPOBASE_BODY, SETTING_FREE_BODY, startBare, type RestOptions, type RestResult, type Target } from './rest.js';
import { interleave, WIRE_SCENARIOS, type WireOptions, type WireResult, type WireTarget } from './wire.js';

export interface CitusResult {
  workers: number;
  /** Where the pgbench repo lives. */
  repoNode: string;
  wire: WireResult[];
  rest: RestResult['targets'];
  /** The REST targets with a setting-free statement (`SELECT 1 AS one`): no reset between requests. */
  restSettingFree: RestResult['targets'];
  /** Why the `--against` build is not in it (its world could not start on Citus). */
  refNotRun?: string;
}

const SCENARIOS = WIRE_SCENARIOS.filter((s) => !s.tls && (s.name === 'pgbench -S -M simple' || s.name === 'pgbench -S -M extended' || s.name === 'pgbench TPC-B -M simple'));

export const CITUS_DIRECT = 'Citus coordinator direct';
export const CITUS_REPOBASE = 'repobase on Citus';
export const CITUS_BARE = 'bare fastify+pg on the coordinator';

/** One build of repobase (as shipped) on a Citus cluster of its own, with the pgbench repo in it. */
interface CitusWorld {
  workers: number;
  repoNode: string;
  direct: Conn;
  repobase: Conn;
  httpUrl: string;
  key: string;
  servicePid: number;
  postgresPid: number;
  stop(): Promise<void>;
}

async function startCitusWorld(bin: string, scale: number, label: string, log: (s: string) => void): Promise<CitusWorld> {
  log(`starting a Citus cluster (coordinator + 2 workers)${label}`);
  const citus = await startCitus({ workers: 2, database: 'bench' });
  const dir = await mkdtemp(join(tmpdir(), 'repobase-bench-citus-'));
  const stops: (() => Promise<void>)[] = [() => citus.stop(), () => rm(dir, { recursive: true, force: true })];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const env = serviceEnv(citus.url(), join(dir, 'repobase'));
    const key = await createBenchUser(env, bin);
    const [httpPort, wirePort] = [await freePort(), await freePort()];
    const service = start('repobase', bin, ['serve'], { ...env, REPOBASE_HTTP_PORT: String(httpPort), REPOBASE_PG_PORT: String(wirePort), REPOBASE_WORKERS: '0' });
    stops.push(service.stop);
    const httpUrl = `http://127.0.0.1:${httpPort}`;
    await waitFor(`repobase on Citus${label}`, async () => service.output().includes('repobase is running') && (await fetch(`${httpUrl}/healthz`)).ok, 60_000);

    const admin = new pg.Client({ connectionString: citus.url() });
    await admin.connect();
    stops.push(() => admin.end());
    // The direct target sees the pgbench tables unqualified, as repobase's database name does.
    await admin.query(`ALTER ROLE ${USER} SET search_path = "${REPO}"`);
    const repobase: Conn = { host: '127.0.0.1', port: wirePort, user: USER, password: key, dbname: REPO };
    const direct: Conn = { host: citus.coordinator.host, port: citus.coordinator.port, user: USER, password: 'trusted', dbname: citus.database };
    log(`pgbench -i -s ${scale} through repobase on Citus${label}`);
    const init = await run('pgbench', ['-i', '-s', String(scale), '-q', conninfo(repobase)]);
    if (init.code !== 0) throw new Error(`pgbench -i on Citus failed: ${init.stderr}`);
    const placed = await admin.query<{ node: string }>(`SELECT DISTINCT s.nodename || ':' || s.nodeport AS node FROM citus_shards s WHERE s.table_name::text LIKE '"${REPO}".%'`);
    return { workers: citus.workers.length, repoNode: placed.rows.map((r) => r.node).join(', '), direct, repobase, httpUrl, key, servicePid: service.child.pid!, postgresPid: await citus.postmasterPid(), stop };
  } catch (err: unknown) {
    await stop();
    throw err;
  }
}

function restTarget(world: CitusWorld, name: string): Target {
  return { name, route: { url: `${world.httpUrl}/api/v1beta/query/`, pid: world.servicePid }, headers: { authorization: `Bearer ${world.key}` }, body: REPOBASE_BODY, postgresPid: world.postgresPid };
}

/** The Citus scenario; with `ref`, that build on a Citus cluster of its own too (targets named with its `suffix`). */
export async function runCitus(opts: { wire: WireOptions; rest: RestOptions; scale: number }, log: (s: string) => void, ref?: { bin: string; suffix: string }): Promise<CitusResult> {
  const stops: (() => Promise<void>)[] = [];
  try {
    const ours = await startCitusWorld(BIN, opts.scale, '', log);
    stops.push(ours.stop);
    // An older build may not run on Citus at all (d724f64's control plane cannot create a user
    // there): this build is measured still, and the report says why the other is not.
    let refNotRun: string | undefined;
    const theirs = ref
      ? await startCitusWorld(ref.bin, opts.scale, ` for${ref.suffix}`, log).catch((err: unknown) => {
          refNotRun = `${CITUS_REPOBASE}${ref.suffix} not run: ${(err as Error).message.split('\n')[0]}`;
          log(refNotRun);
          return undefined;
        })
      : undefined;
    if (theirs) stops.push(theirs.stop);
    const wireTargets: WireTarget[] = [
      { name: CITUS_DIRECT, conn: ours.direct, direct: ours.direct },
      { name: CITUS_REPOBASE, conn: ours.repobase, direct: ours.direct },
      ...(theirs && ref ? [{ name: `${CITUS_REPOBASE}${ref.suffix}`, conn: theirs.repobase, direct: theirs.direct }] : []),
    ];
    const wire = await interleave(SCENARIOS, () => wireTargets, opts.wire, log);

    const bare = await startBare({ direct: ours.direct }, 1);
    stops.push(bare.stop);
    const restTargets: Target[] = [
      { name: CITUS_BARE, route: bare, headers: {}, body: BARE_BODY, postgresPid: ours.postgresPid },
      restTarget(ours, CITUS_REPOBASE),
      ...(theirs && ref ? [restTarget(theirs, `${CITUS_REPOBASE}${ref.suffix}`)] : []),
    ];
    const rest = await measure(restTargets, opts.rest, log, ' on Citus');
    // A statement after which no reset is due: what the coordinator spends when it is skipped.
    const freeTargets = restTargets.map((t) => ({ ...t, body: SETTING_FREE_BODY }));
    const restSettingFree = await measure(freeTargets, opts.rest, log, ' on Citus, SELECT 1');
    return { workers: ours.workers, repoNode: ours.repoNode, wire, rest, restSettingFree, refNotRun };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}
