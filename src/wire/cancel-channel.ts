/**
 * The cancel channel: how a wire CancelRequest that reaches the wrong process — another worker of
 * the same `repobase serve`, or another instance on the same cluster — gets to the process that
 * gave out its key (see src/wire/cancel.ts for the key's layout and the routing).
 *
 * Each serving process holds one connection of its own to the cluster, on which it
 *
 * - claims its *tag* with a session advisory lock (class `TAG_LOCK_CLASS`, object = the tag),
 *   picked at random among the free ones: Postgres holds the lock as long as the connection
 *   lives, so no two live processes on the cluster hold the same tag;
 * - `LISTEN`s on `CANCEL_CHANNEL`. A process passes on a cancel with `pg_notify(CANCEL_CHANNEL,
 *   '<process id>:<secret key>')`; every process hears it, the one with that tag checks the
 *   secret in constant time and forwards the cancel upstream, the others ignore it. A signal
 *   (`pg_terminate_backend` / `pg_cancel_backend` of another client's id) travels as
 *   `'<kind>:<process id>:<user>'`, and the owner acts only if that user is the client's.
 *
 * Users never hear the channel: a user's channels live upstream as `<user>/…`, and the channel's
 * name has no `/`, so it is outside every user's namespace; names starting with `repobase_` are
 * refused outright (src/policy/channels.ts).
 *
 * Limits, both of which lose cancels but never cancel the wrong statement (the secret decides):
 * if the connection drops, cancels passed on meanwhile are not heard, and on reconnecting the
 * process claims its tag again — which, if a new process took it meanwhile, it shares from then
 * on (logged). A role on the same database can take advisory locks of the tag class (they are
 * visible in `pg_locks`); when no tag is free, a random one is used, with a warning.
 */
import { randomInt } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../shared/logger.js';
import { MAX_TAG, type CancelPeers, type SignalHandler, type SignalKind } from './cancel.js';

/** The channel cancels travel on between processes. No `/`, and `repobase_`: no user's channel can be named so. */
export const CANCEL_CHANNEL = 'repobase_cancel';
/** The advisory lock class of the tags ("rbcn"). */
export const TAG_LOCK_CLASS = 0x7262636e;
/** Random tags tried before giving up on a free one. */
const CLAIM_TRIES = 64;

export interface CancelChannel extends CancelPeers {
  close(): Promise<void>;
}

const PAYLOAD = /^(\d+):(-?\d+)$/;
const SIGNAL = /^(cancel|terminate):(\d+):(.+)$/s;

type Handlers = { cancel: (processId: number, secretKey: number) => void; signal: SignalHandler };

/** A cancel (`<process id>:<secret key>`) or a signal (`<kind>:<process id>:<user>`) to every handler. */
function dispatch(payload: string, handlers: readonly Handlers[]): void {
  const key = PAYLOAD.exec(payload);
  if (key) {
    for (const h of handlers) h.cancel(Number(key[1]), Number(key[2]));
    return;
  }
  const signal = SIGNAL.exec(payload);
  if (signal) for (const h of handlers) h.signal(signal[1] as SignalKind, Number(signal[2]), signal[3]!);
}

async function tryLock(client: pg.Client, tag: number): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [TAG_LOCK_CLASS, tag]);
  return rows[0]!.ok;
}

/**
 * Connects, claims a tag and listens (or keeps trying, in the background). `notifier` sends the
 * NOTIFYs (the admin pool), so that a cancel can be passed on even while the listening
 * connection reconnects.
 */
export async function openCancelChannel(config: pg.ClientConfig, notifier: Pick<pg.Pool, 'query'>, log: Logger): Promise<CancelChannel> {
  log = log.child({ mod: 'cancel-channel' });
  const handlers: Handlers[] = [];
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let delay = 500;
  // Until the first connection claims one, a provisional tag: no client gets a key before the
  // upstream is reachable (logging in needs the control plane), so none holds it when it changes.
  let tag = randomInt(1, MAX_TAG + 1);
  let claimed = false;

  const claim = async (c: pg.Client): Promise<void> => {
    if (claimed) {
      if (!(await tryLock(c, tag))) log.error({ tag }, 'cancel tag taken by another process while reconnecting: cancels for either may be lost');
      return;
    }
    for (let i = 0, candidate = tag; i < CLAIM_TRIES; i++, candidate = randomInt(1, MAX_TAG + 1)) {
      if (await tryLock(c, candidate)) {
        tag = candidate;
        claimed = true;
        return;
      }
    }
    claimed = true;
    log.warn({ tag }, 'no free cancel tag found: using a random one (cancels for another process with the same tag may be lost)');
  };

  const connect = async (): Promise<void> => {
    const c = new pg.Client(config);
    c.on('notification', (msg) => {
      if (msg.channel !== CANCEL_CHANNEL || msg.payload === undefined) return;
      dispatch(msg.payload, handlers);
    });
    c.on('error', (err) => {
      log.warn({ err }, 'cancel channel lost its connection: cancels passed on meanwhile are not heard');
      void c.end().catch(() => undefined);
      schedule();
    });
    await c.connect();
    try {
      await claim(c);
      await c.query(`LISTEN ${CANCEL_CHANNEL}`);
    } catch (err: unknown) {
      await c.end().catch(() => undefined);
      throw err;
    }
    if (closed) return void (await c.end().catch(() => undefined));
    client = c;
    delay = 500;
  };
  const schedule = () => {
    client = undefined;
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch((err: unknown) => {
        log.warn({ err }, 'cancel channel cannot reconnect');
        schedule();
      });
    }, delay);
    retry.unref();
    delay = Math.min(delay * 2, 10_000);
  };

  const notify = (payload: string): void => {
    notifier.query('SELECT pg_notify($1, $2)', [CANCEL_CHANNEL, payload]).catch((err: unknown) => log.warn({ err }, 'cancel not passed on'));
  };

  // An upstream that is down at start-up does not stop the service (see ControlPlane.openWhenReachable): retried.
  await connect().catch((err: unknown) => {
    log.warn({ err }, 'cancel channel cannot connect yet: retrying');
    schedule();
  });
  return {
    get tag() {
      return tag;
    },
    forward: (processId, secretKey) => notify(`${processId}:${secretKey}`),
    signal: (kind, processId, user) => notify(`${kind}:${processId}:${user}`),
    listen: (cancel, signal) => void handlers.push({ cancel, signal }),
    close: async () => {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined); // ends the session: the tag's lock goes with it
    },
  };
}
