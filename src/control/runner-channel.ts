/**
 * The runner channel: how a serving process runs async queries among others on one cluster. It
 * holds one connection of its own, on which it
 *
 * - claims a *runner id* with a session advisory lock (RUNNER_LOCK_CLASS, id), picked at random
 *   among the free ones. The queries it runs name it; Postgres holds the lock exactly as long as
 *   the process's connection lives, so a process that dies (killed, its machine gone) frees it at
 *   once, and whoever looks next marks its queries failed (query-records.ts `failOrphans`);
 * - `LISTEN`s on QUERY_CHANNEL, where a `DELETE /queries/<id>` on any instance sends the id of a
 *   query it cancelled; the process running it cancels its statement.
 *
 * A lost connection loses the lock: the process's running queries are then no longer its own
 * (another process may mark them failed at any moment), so `lost` is called and it stops them; it
 * reconnects with back-off under a new id. Users never hear the channel: their channels live
 * upstream under `<user>/…`, and names starting with `repobase_` are refused (policy/channels.ts).
 */
import { randomInt } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../shared/logger.js';
import { RUNNER_LOCK_CLASS } from './query-records.js';

/** The channel of async query cancels (a query id as payload). */
export const QUERY_CHANNEL = 'repobase_queries';
const CLAIM_TRIES = 64;

export interface RunnerChannel {
  /** This process's runner id while its lock is held; undefined while the channel is down. */
  readonly id: number | undefined;
  close(): Promise<void>;
}

export interface RunnerHandlers {
  /** A cancel of query `id` was heard (anyone may send one: check the query before obeying). */
  cancel(id: string): void;
  /** The connection, and with it the runner id, was lost. */
  lost(): void;
}

/** Connects, claims an id and listens, or keeps trying in the background when the cluster is not reachable. */
export async function openRunnerChannel(config: pg.ClientConfig, handlers: RunnerHandlers, log: Logger): Promise<RunnerChannel> {
  log = log.child({ mod: 'runner-channel' });
  let client: pg.Client | undefined;
  let id: number | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let delay = 500;

  const connect = async (): Promise<void> => {
    const c = new pg.Client(config);
    c.on('notification', (msg) => {
      if (msg.channel === QUERY_CHANNEL && msg.payload) handlers.cancel(msg.payload);
    });
    c.on('error', (err) => {
      if (client !== c) return;
      log.warn({ err }, 'runner channel lost its connection: the async queries running here are stopped');
      id = undefined;
      client = undefined;
      void c.end().catch(() => undefined);
      handlers.lost();
      schedule();
    });
    await c.connect();
    try {
      let claimed: number | undefined;
      for (let i = 0; i < CLAIM_TRIES && claimed === undefined; i++) {
        const candidate = randomInt(1, 2 ** 31 - 1);
        const { rows } = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [RUNNER_LOCK_CLASS, candidate]);
        if (rows[0]?.ok) claimed = candidate;
      }
      if (claimed === undefined) throw new Error('no free runner id');
      await c.query(`LISTEN ${QUERY_CHANNEL}`);
      if (closed) return void (await c.end().catch(() => undefined));
      client = c;
      id = claimed;
      delay = 500;
    } catch (err: unknown) {
      await c.end().catch(() => undefined);
      throw err;
    }
  };
  const schedule = (): void => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch((err: unknown) => {
        log.warn({ err }, 'runner channel cannot reconnect');
        schedule();
      });
    }, delay);
    retry.unref();
    delay = Math.min(delay * 2, 10_000);
  };

  await connect().catch((err: unknown) => {
    log.warn({ err }, 'runner channel cannot connect yet: retrying');
    schedule();
  });
  return {
    get id() {
      return id;
    },
    close: async () => {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = undefined;
      id = undefined;
      await c?.end().catch(() => undefined); // the lock goes with the session
    },
  };
}

/** Tells the process running query `id` to cancel it (sent when the surrounding transaction commits, or at once). */
export async function notifyCancel(db: Pick<pg.Pool, 'query'>, id: string): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [QUERY_CHANNEL, id]);
}
