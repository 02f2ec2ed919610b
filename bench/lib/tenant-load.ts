/**
 * Load of several tenants at once, for the `tenants` scenarios: groups of clients, each group one
 * user's, on the wire front end (the project's own protocol codec, one simple Query per statement)
 * or on REST (`POST /query/`, keep-alive). A client runs its group's unit — a list of statements,
 * `$N` in them replaced by a random number from 1 to `keys` — in a loop with an optional think
 * time, on a schedule (`perClientPerSecond`), or once and then holds its connection (`park`: a
 * transaction left open, idle).
 *
 * Run as a process of its own (`node dist/bench/lib/tenant-load.js`, the `TenantLoadConfig` as
 * JSON in `TENANT_LOAD_CONFIG`: it holds API keys), so that one tenant's many clients do not slow
 * another's measurement in one event loop: it prints `ready` once every wire client has logged in,
 * waits `warmupSeconds`, measures for `seconds`, and writes a `TenantLoadResult` to `resultFile`.
 */
import { writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { pathToFileURL } from 'node:url';
import { BackendCode, buildQuery, buildTerminate, decodeErrorResponse, decodeReadyForQuery } from '../../src/protocol/index.js';
import { PgError } from '../../src/shared/errors.js';
import { openUpstreamSession, type UpstreamSession } from '../../src/upstream/session.js';
import { countError, percentile, type ErrorTally } from './stats.js';

export interface LoadGroup {
  name: string;
  front: 'wire' | 'rest';
  user: string;
  key: string;
  clients: number;
  /** The statements of one unit, in order (each a Query of its own on the wire; each a request over REST). */
  unit: string[];
  /** `$N` is replaced by a random number from 1 to this. */
  keys?: number;
  /** Random think time between units, up to this many ms (0: none). */
  thinkMs?: number;
  /** Run the unit once, then hold the connection until the end. */
  park?: boolean;
  /**
   * Paced: each client starts a unit this many times a second, on a fixed schedule (a light
   * user's app, not a closed loop). A unit that waited for the one before it (the client fell
   * behind its schedule) counts from when it was due, so the delay shows; one on time counts from
   * when it was sent (the load process's own timer being late is not the service's latency).
   */
  perClientPerSecond?: number;
}

export interface TenantLoadConfig {
  host: string;
  wirePort: number;
  httpUrl: string;
  /** The wire database (a repo, or the service database). */
  database: string;
  warmupSeconds: number;
  seconds: number;
  groups: LoadGroup[];
  resultFile: string;
}

export interface GroupResult {
  name: string;
  clients: number;
  /** Units completed without error while measuring. */
  units: number;
  perSecond: number;
  latencyMs: { p50: number; p99: number; max: number };
  /** Errors of the whole run (warm-up too) by SQLSTATE; `08006` a connection lost without a word. */
  errors: ErrorTally;
}

export interface TenantLoadResult {
  seconds: number;
  groups: GroupResult[];
}

/** Logins in flight at once. */
const LOGINS_AT_ONCE = 16;

/** One wire client: one simple Query at a time. */
class WireClient {
  private waiting: ((error: PgError | undefined) => void) | undefined;
  private error: PgError | undefined;
  closed: PgError | 'lost' | undefined;

  constructor(private readonly session: UpstreamSession) {
    session.socket.on('data', (chunk: Buffer) => {
      try {
        session.reader.push(chunk, this.onFrame);
      } catch {
        session.socket.destroy();
      }
    });
    session.socket.on('close', () => {
      this.closed = this.error ?? 'lost';
      const w = this.waiting;
      this.waiting = undefined;
      w?.(this.closed === 'lost' ? new PgError('08006', 'the connection closed unexpectedly') : this.closed);
    });
  }

  private readonly onFrame = (code: number, frame: Buffer): void => {
    if (code === BackendCode.ErrorResponse) this.error = decodeErrorResponse(frame);
    else if (code === BackendCode.ReadyForQuery) {
      decodeReadyForQuery(frame);
      const error = this.error;
      this.error = undefined;
      const w = this.waiting;
      this.waiting = undefined;
      w?.(error);
    }
  };

  query(sql: string): Promise<PgError | undefined> {
    if (this.closed) return Promise.resolve(this.closed === 'lost' ? new PgError('08006', 'the connection closed unexpectedly') : this.closed);
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.session.socket.write(buildQuery(sql));
    });
  }

  end(): void {
    if (!this.closed) this.session.socket.end(buildTerminate());
  }
}

/**
 * One POST over a kept-alive connection of `agent`: Node's `http` costs the load process about
 * half of what `fetch` does per request, CPU the service's machine would otherwise lose to measuring.
 */
function post(agent: Agent, url: string, key: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const fill = (sql: string, keys: number) => sql.replace(/\$N/g, () => String(1 + Math.floor(Math.random() * keys)));

export async function runTenantLoad(config: TenantLoadConfig, onReady: () => void): Promise<TenantLoadResult> {
  const state = config.groups.map((g) => ({ group: g, latencies: [] as number[], units: 0, errors: {} as ErrorTally }));
  let measuring = false;
  let stopping = false;
  const wireClients: { client: WireClient | undefined; s: (typeof state)[number] }[] = [];
  for (const s of state) if (s.group.front === 'wire') for (let i = 0; i < s.group.clients; i++) wireClients.push({ client: undefined, s });
  const login = async (s: (typeof state)[number]): Promise<WireClient | undefined> => {
    try {
      return new WireClient(await openUpstreamSession({ host: config.host, port: config.wirePort, database: config.database, user: s.group.user, password: s.group.key }, { application_name: 'tenant-load' }));
    } catch (err: unknown) {
      countError(s.errors, err instanceof PgError ? err.code : '08006', err instanceof Error ? err.message : String(err));
      return undefined;
    }
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: LOGINS_AT_ONCE }, async () => {
      for (let i = next++; i < wireClients.length; i = next++) wireClients[i]!.client = await login(wireClients[i]!.s);
    }),
  );
  onReady();

  const wireUnit = async (client: WireClient, s: (typeof state)[number]): Promise<boolean> => {
    for (const sql of s.group.unit) {
      const error = await client.query(fill(sql, s.group.keys ?? 1));
      if (error) {
        countError(s.errors, error.code, error.message);
        if (!client.closed) await client.query('ROLLBACK');
        return false;
      }
    }
    return true;
  };
  const agent = new Agent({ keepAlive: true });
  const restUnit = async (s: (typeof state)[number]): Promise<boolean> => {
    for (const sql of s.group.unit) {
      try {
        const { status, text } = await post(agent, `${config.httpUrl}/api/v1beta/query/`, s.group.key, JSON.stringify({ query_string: fill(sql, s.group.keys ?? 1) }));
        if (status !== 200) {
          const e = (JSON.parse(text) as { error?: { code: string; message: string } }).error;
          countError(s.errors, e?.code ?? String(status), e?.message ?? text.slice(0, 200));
          return false;
        }
      } catch (err: unknown) {
        countError(s.errors, 'socket', (err as Error).message);
        return false;
      }
    }
    return true;
  };
  const loop = async (s: (typeof state)[number], first: WireClient | undefined) => {
    let client = first;
    const g = s.group;
    const interval = g.perClientPerSecond ? 1000 / g.perClientPerSecond : 0;
    let due = performance.now() + Math.random() * interval;
    let behind = false;
    while (!stopping) {
      if (g.front === 'wire' && (client === undefined || client.closed)) {
        await new Promise((r) => setTimeout(r, 100));
        client = await login(s);
        continue;
      }
      // A timer may fire up to a millisecond before it is due: wait again until it is.
      for (let ahead = due - performance.now(); interval && ahead > 0; ahead = due - performance.now()) await new Promise((r) => setTimeout(r, Math.ceil(ahead)));
      const begun = behind ? due : performance.now();
      due += interval;
      const ok = g.front === 'wire' ? await wireUnit(client!, s) : await restUnit(s);
      const done = performance.now();
      behind = interval > 0 && done > due;
      if (ok && measuring) {
        s.units++;
        s.latencies.push(done - begun);
      }
      if (g.park) {
        while (!stopping) await new Promise((r) => setTimeout(r, 200));
        break;
      }
      if (g.thinkMs) await new Promise((r) => setTimeout(r, Math.random() * g.thinkMs!));
    }
    client?.end();
  };
  const loops = [...wireClients.map((w) => loop(w.s, w.client)), ...state.filter((s) => s.group.front === 'rest').flatMap((s) => Array.from({ length: s.group.clients }, () => loop(s, undefined)))];
  await new Promise((r) => setTimeout(r, config.warmupSeconds * 1000));
  measuring = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, config.seconds * 1000));
  measuring = false;
  const seconds = (performance.now() - started) / 1000;
  stopping = true;
  await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 10_000))]);
  agent.destroy();
  return {
    seconds,
    groups: state.map((s) => {
      const sorted = Float64Array.from(s.latencies).sort();
      return {
        name: s.group.name,
        clients: s.group.clients,
        units: s.units,
        perSecond: s.units / seconds,
        latencyMs: { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN },
        errors: s.errors,
      };
    }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const config = JSON.parse(process.env.TENANT_LOAD_CONFIG ?? '') as TenantLoadConfig;
  const result = await runTenantLoad(config, () => process.stdout.write('ready\n'));
  await writeFile(config.resultFile, JSON.stringify(result));
  process.stdout.write('done\n');
  process.exit(0);
}
