/**
 * A TPC-B-like wire load: many clients, each running pgbench's built-in `tpcb-like` transaction
 * (BEGIN, three UPDATEs, a SELECT, an INSERT, END; one simple-protocol `Query` per statement, as
 * `pgbench -M simple`) in a loop until a deadline, over the project's own protocol codec.
 *
 * Not pgbench itself because the soak must report every error by SQLSTATE and pgbench prints
 * only the message text (and stops the client); here an error is counted under its code, the
 * transaction is rolled back and the client goes on, and a client whose connection ends is
 * counted (its FATAL's code, else `08006`) and connects again.
 *
 * Run as a process of its own (`node dist/bench/lib/tpcb-load.js`, the `LoadConfig` as JSON in
 * the environment variable `TPCB_LOAD_CONFIG`: it holds API keys) so that
 * neither its CPU nor its sockets count against the service measured, and its event loop does
 * not share the REST load's: it prints `ready <n>` once every client has logged in and run a
 * first transaction, starts the clock, and at the end prints one line `result <LoadResult JSON>`.
 */
import { pathToFileURL } from 'node:url';
import { BackendCode, buildQuery, buildTerminate, decodeErrorResponse, decodeReadyForQuery, type TransactionStatus } from '../../src/protocol/index.js';
import { PgError } from '../../src/shared/errors.js';
import { openUpstreamSession, type UpstreamSession } from '../../src/upstream/session.js';
import { countError, percentile, type ErrorTally } from './stats.js';

export interface LoadConfig {
  host: string;
  port: number;
  /** The repo, as the wire database name: the pgbench tables are reached unqualified. */
  database: string;
  /** pgbench's scale of those tables (100,000 accounts, 10 tellers and 1 branch per unit). */
  scale: number;
  seconds: number;
  /** Each account's user name, API key and how many clients log in as it. */
  accounts: { user: string; key: string; clients: number }[];
  /** Width of the windows `transactionsPerWindow` counts in, in seconds. */
  windowSeconds: number;
}

export interface LoadResult {
  clients: number;
  transactions: number;
  seconds: number;
  /** Of the committed transactions, from BEGIN sent to END's ReadyForQuery. */
  latencyMs: { p50: number; p99: number; max: number; mean: number };
  /** Committed transactions per window of `windowSeconds`: a soak's throughput should stay level. */
  transactionsPerWindow: number[];
  errors: ErrorTally;
}

/** Logins in flight at once while the clients start. */
const LOGINS_AT_ONCE = 8;

/** A connection closed without an ErrorResponse saying why: libpq's "server closed the connection unexpectedly". */
const CONNECTION_LOST = '08006';

/** The answer to one Query: its error if any, and the transaction status of its ReadyForQuery. */
interface Answer {
  error?: PgError;
  status: TransactionStatus;
}

/** One logged-in wire client that runs one simple Query at a time. */
class Client {
  private waiting: ((a: Answer) => void) | undefined;
  private failed: (() => void) | undefined;
  private error: PgError | undefined;
  /** Why the connection ended, once it has: the error it got last (a FATAL), else 'lost'. */
  closed: PgError | 'lost' | undefined;

  constructor(private readonly session: UpstreamSession) {
    session.socket.on('data', (chunk: Buffer) => {
      try {
        session.reader.push(chunk, this.onFrame);
      } catch (err: unknown) {
        this.error = err instanceof PgError ? err : undefined;
        session.socket.destroy();
      }
    });
    session.socket.on('close', () => {
      this.closed = this.error ?? 'lost';
      this.failed?.();
    });
  }

  private readonly onFrame = (code: number, frame: Buffer): void => {
    if (code === BackendCode.ErrorResponse) this.error = decodeErrorResponse(frame);
    else if (code === BackendCode.ReadyForQuery) {
      const answer: Answer = { status: decodeReadyForQuery(frame), ...(this.error && { error: this.error }) };
      this.error = undefined;
      const resolve = this.waiting;
      this.waiting = this.failed = undefined;
      resolve?.(answer);
    }
  };

  /** Runs `sql`; rejects once the connection is gone. */
  query(sql: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('closed'));
      this.waiting = resolve;
      this.failed = () => reject(new Error('closed'));
      this.session.socket.write(buildQuery(sql));
    });
  }

  end(): void {
    if (!this.closed) this.session.socket.end(buildTerminate());
  }
}

const randomInt = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

/** pgbench's `tpcb-like` script with its random values drawn. */
function tpcbStatements(scale: number): string[] {
  const aid = randomInt(1, 100_000 * scale);
  const bid = randomInt(1, scale);
  const tid = randomInt(1, 10 * scale);
  const delta = randomInt(-5000, 5000);
  return [
    'BEGIN;',
    `UPDATE pgbench_accounts SET abalance = abalance + ${delta} WHERE aid = ${aid};`,
    `SELECT abalance FROM pgbench_accounts WHERE aid = ${aid};`,
    `UPDATE pgbench_tellers SET tbalance = tbalance + ${delta} WHERE tid = ${tid};`,
    `UPDATE pgbench_branches SET bbalance = bbalance + ${delta} WHERE bid = ${bid};`,
    `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (${tid}, ${bid}, ${aid}, ${delta}, CURRENT_TIMESTAMP);`,
    'END;',
  ];
}

/**
 * Logs every client in and runs one transaction on each (unrecorded: logins and the first
 * statements start every upstream session), calls `onReady`, then runs the load for
 * `config.seconds`.
 */
export async function runTpcbLoad(config: LoadConfig, onReady: (clients: number) => void): Promise<LoadResult> {
  const errors: ErrorTally = {};
  const fail = (err: PgError | 'lost') => (err === 'lost' ? countError(errors, CONNECTION_LOST, 'the connection closed unexpectedly') : countError(errors, err.code, err.message));
  const connect = async (account: LoadConfig['accounts'][number]): Promise<Client | undefined> => {
    try {
      return new Client(await openUpstreamSession({ host: config.host, port: config.port, database: config.database, user: account.user, password: account.key }, { application_name: 'soak' }));
    } catch (err: unknown) {
      fail(err instanceof PgError ? err : 'lost');
      return undefined;
    }
  };
  /** One transaction; its errors, and the loss of the connection, are counted. */
  const transaction = async (client: Client): Promise<'committed' | 'failed' | 'closed'> => {
    try {
      let error: PgError | undefined;
      let status: TransactionStatus = 'I';
      for (const sql of tpcbStatements(config.scale)) {
        ({ error, status } = await client.query(sql));
        if (error) break;
      }
      if (!error) return 'committed';
      fail(error);
      if (status !== 'I') await client.query('ROLLBACK;');
      return 'failed';
    } catch {
      fail(client.closed ?? 'lost');
      return 'closed';
    }
  };
  const slots = config.accounts.flatMap((a) => Array.from({ length: a.clients }, () => a));
  // A few logins at a time, as pgbench's threads make them one after the other: 150 at once took
  // over the 10 s login timeout for a third of them on the shared 2-core machine.
  const clients: (Client | undefined)[] = [];
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < slots.length; i = next++) {
      const client = await connect(slots[i]!);
      clients[i] = client && (await transaction(client)) !== 'closed' ? client : undefined;
    }
  };
  await Promise.all(Array.from({ length: LOGINS_AT_ONCE }, lane));
  onReady(clients.filter(Boolean).length);

  const latencies: number[] = [];
  const windows: number[] = [];
  const started = performance.now();
  const deadline = started + config.seconds * 1000;
  const loop = async (first: Client | undefined, account: LoadConfig['accounts'][number]) => {
    let client = first;
    while (performance.now() < deadline) {
      if (!client) {
        await new Promise((r) => setTimeout(r, 100));
        client = await connect(account);
        continue;
      }
      const begun = performance.now();
      const outcome = await transaction(client);
      if (outcome === 'closed') client = undefined;
      if (outcome !== 'committed') continue;
      const now = performance.now();
      latencies.push(now - begun);
      const w = Math.floor((now - started) / (config.windowSeconds * 1000));
      windows[w] = (windows[w] ?? 0) + 1;
    }
    client?.end();
  };
  await Promise.all(clients.map((c, i) => loop(c, slots[i]!)));
  const seconds = (performance.now() - started) / 1000;

  const sorted = Float64Array.from(latencies).sort();
  const whole = Math.floor(config.seconds / config.windowSeconds);
  return {
    clients: slots.length,
    transactions: latencies.length,
    seconds,
    latencyMs: { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN, mean: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length) },
    // Only whole windows: the last one may have a few transactions that ended past the deadline.
    transactionsPerWindow: Array.from({ length: whole }, (_, i) => windows[i] ?? 0),
    errors,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const config = JSON.parse(process.env.TPCB_LOAD_CONFIG ?? '') as LoadConfig;
  const result = await runTpcbLoad(config, (n) => process.stdout.write(`ready ${n}\n`));
  process.stdout.write(`result ${JSON.stringify(result)}\n`);
}
