/**
 * A real REST server for a test file: its own database on the test cluster, the control plane,
 * the policy, per-role pools and the fastify app listening on an OS-chosen port. Requests go
 * over real HTTP with fetch.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { ControlPlane } from '../../src/control/control-plane.js';
import { buildApp } from '../../src/http/app.js';
import { AsyncQueries } from '../../src/http/async-queries.js';
import { createPolicy } from '../../src/policy/index.js';
import type { Config } from '../../src/shared/config.js';
import { createLogger, type Logger } from '../../src/shared/logger.js';
import { openCluster, type Cluster } from '../../src/upstream/cluster.js';
import { RolePools } from '../../src/upstream/role-pools.js';
import { sessionPoolFor } from '../../src/upstream/session-pool.js';
import { defaultLimits, loginSettings } from '../../src/shared/limits.js';
import { testConfig } from './cluster.js';

export interface RestServer {
  url: string;
  config: Config;
  cluster: Cluster;
  control: ControlPlane;
  pools: RolePools;
  app: FastifyInstance;
  /** Every log line written so far (when started with `captureLogs`). */
  logs: string[];
  /** `alice` → `alice_k3x9q` (unique in the cluster). */
  name(base: string): string;
  /** Creates a user; returns its name and first API key. */
  user(base: string): Promise<{ name: string; key: string }>;
  /** A request to `/api/v1beta<path>` with `key` as bearer (none when undefined). */
  call(key: string | undefined, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** `POST /query/`: status, the answer's exact text, and that text parsed. */
  query(key: string, sql: string): Promise<{ status: number; text: string; body: QueryBody }>;
  stop(): Promise<void>;
}

/** Loose shape of a query answer, for assertions. */
export interface QueryBody {
  query_string?: string;
  fields?: Record<string, string>;
  data?: unknown[][];
  command?: string | null;
  row_count?: number | null;
  truncated?: boolean;
  error?: { code: string; message: string; detail: string | null; hint: string | null; position: number | null };
}

export async function startRest(opts: { config?: Record<string, unknown>; captureLogs?: boolean; cluster?: Partial<Cluster> } = {}): Promise<RestServer> {
  const config = await testConfig({ logLevel: opts.captureLogs ? 'trace' : 'warn', ...opts.config });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const log: Logger = opts.captureLogs ? createLogger('trace', sink) : createLogger('warn');
  const cluster = await openCluster(config, log);
  const control = await ControlPlane.open(cluster, log, { listen: true });
  const policy = await createPolicy({ maxStatementBytes: config.maxStatementBytes });
  const upstream = { ...cluster, ...opts.cluster };
  const pools = new RolePools({ cluster: upstream, config, log });
  const sessions = sessionPoolFor(upstream, { maxPerRole: config.upstreamPoolMax, idleMs: config.upstreamIdleMs, reset: 'lazy', waitMs: 10_000, settingsOf: () => loginSettings(defaultLimits(config)), log });
  const queries = await AsyncQueries.start({ cluster: upstream, control, policy, config, log });
  const app = await buildApp({ config, control, log, policy, pools, sessions, queries });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const suffix = randomBytes(3).toString('hex');
  const name = (base: string) => `${base}_${suffix}`;
  const call: RestServer['call'] = (key, method, path, body, headers = {}) =>
    fetch(`${url}/api/v1beta${path}`, {
      method,
      headers: {
        ...(key !== undefined && { authorization: `Bearer ${key}` }),
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  return {
    url,
    config,
    cluster,
    control,
    pools,
    app,
    logs,
    name,
    user: async (base) => {
      const n = name(base);
      const key = await control.createUser(n);
      return { name: n, key: key.key };
    },
    call,
    query: async (key, sql) => {
      const res = await call(key, 'POST', '/query/', { query_string: sql });
      const text = await res.text();
      return { status: res.status, text, body: JSON.parse(text) as QueryBody };
    },
    stop: async () => {
      await app.close();
      await queries.close();
      await pools.close();
      sessions.close();
      await policy.close();
      await control.close();
      await cluster.close();
    },
  };
}
