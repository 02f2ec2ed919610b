/**
 * Change notifications between instances. Every control-plane change that affects
 * authentication or rights sends `NOTIFY repobase_control` in its own transaction; each serving
 * instance listens and drops what it cached, so a revoked key or a removed collaborator stops
 * working on every instance as soon as the change commits. If the listening connection is lost,
 * every cache is dropped and entries expire after `CACHE_TTL_MS` at the latest.
 *
 * The same connection listens on `repobase_schema`, where Postgres' own event triggers tell of
 * every schema change to a repo (migration 4), for the console's live updates.
 */
import pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { Queryable } from './db.js';
import { SCHEMA_EVENT_CHANNEL } from './migrations.js';

export const CHANNEL = 'repobase_control';
/** Upper bound on how long a cached key or rights snapshot can outlive a change it missed. */
export const CACHE_TTL_MS = 30_000;

export type ControlEvent = { kind: 'key'; id: string } | { kind: 'user'; name: string } | { kind: 'rights' } | { kind: 'limits'; user: string };

export function encodeEvent(e: ControlEvent): string {
  switch (e.kind) {
    case 'key':
      return `key:${e.id}`;
    case 'user':
      return `user:${e.name}`;
    case 'rights':
      return 'rights';
    case 'limits':
      return `limits:${e.user}`;
    default:
      return assertNever(e);
  }
}

function decodeEvent(payload: string): ControlEvent | undefined {
  if (payload === 'rights') return { kind: 'rights' };
  const [kind, value] = [payload.slice(0, payload.indexOf(':')), payload.slice(payload.indexOf(':') + 1)];
  if (kind === 'key') return { kind: 'key', id: value };
  if (kind === 'user') return { kind: 'user', name: value };
  if (kind === 'limits') return { kind: 'limits', user: value };
  return undefined;
}

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}

/** Sends `event` when the surrounding transaction commits. */
export async function notify(db: Queryable, event: ControlEvent): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [CHANNEL, encodeEvent(event)]);
}

/** A schema change of a repo, as the event trigger reports it. */
export interface SchemaChange {
  /** The repo, `<owner>/<repo>` (its schema's name). */
  repo: string;
  /** The table (or view) it concerns; null for a change of the repo as a whole or of another kind of object. */
  table: string | null;
  /** The command tag: `ALTER TABLE`, `DROP TABLE`, `CREATE SCHEMA`… */
  command: string;
}

function decodeSchemaChange(payload: string): SchemaChange | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { repo, table, command } = value as Record<string, unknown>;
  if (typeof repo !== 'string' || typeof command !== 'string' || (table !== null && typeof table !== 'string')) return undefined;
  return { repo, table, command };
}

/** What the listener hears: a control event, a schema change, or the loss of its connection (events may have been missed). */
export type ListenerEvent = ControlEvent | { kind: 'schema'; change: SchemaChange } | { kind: 'lost' };

export type EventHandler = (event: ListenerEvent) => void;

/** Listens on a dedicated admin connection, reconnecting with back-off until closed. */
export function listen(config: pg.ClientConfig, handler: EventHandler, log: Logger): { ready: Promise<void>; close(): Promise<void> } {
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let delay = 500;

  const connect = async (): Promise<void> => {
    const c = new pg.Client(config);
    c.on('notification', (msg) => {
      if (msg.payload === undefined) return;
      if (msg.channel === SCHEMA_EVENT_CHANNEL) {
        const change = decodeSchemaChange(msg.payload);
        if (change) handler({ kind: 'schema', change });
        return;
      }
      const event = decodeEvent(msg.payload);
      if (event) handler(event);
    });
    c.on('error', (err) => {
      log.warn({ err }, 'control event listener lost its connection');
      handler({ kind: 'lost' });
      schedule();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}; LISTEN ${SCHEMA_EVENT_CHANNEL}`);
      client = c;
      delay = 500;
    } catch (err: unknown) {
      log.warn({ err }, 'control event listener cannot connect');
      await c.end().catch(() => undefined);
      schedule();
    }
  };
  const schedule = () => {
    client = undefined;
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, delay);
    retry.unref();
    delay = Math.min(delay * 2, 10_000);
  };
  const ready = connect();
  return {
    ready,
    close: async () => {
      closed = true;
      if (retry) clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
