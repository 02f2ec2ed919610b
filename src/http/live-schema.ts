/**
 * One caller's stream of live schema events (Server-Sent Events): every schema change of a repo
 * the caller may read at the time of the change, as the control plane hears it from Postgres'
 * event triggers. Rights are the control plane's (cached, dropped on every sharing change), so a
 * collaborator who is removed gets no event of that repo from then on.
 *
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
import { PassThrough, type Readable } from 'node:stream';
import type { ControlPlane, Principal, SchemaChange } from '../control/control-plane.js';
import type { Logger } from '../shared/logger.js';

export interface SchemaStreamOptions {
  /** Interval of the keep-alive comment, which keeps proxies and load balancers from closing a quiet stream. */
  keepAliveMs: number;
  /** What the client should wait before reconnecting (the `retry:` field). */
  retryMs: number;
}

/**
 * A stream nobody reads is closed rather than kept growing: events are small and rare, so this
 * much unread text means the client is stuck.
 */
const MAX_UNREAD_BYTES = 1024 * 1024;

/** Whether the caller may see a change of `repo`: their own namespace, or a repo they may read now (a scoped key: in its scope). */
async function mayRead(control: ControlPlane, who: Principal, repo: string): Promise<boolean> {
  // A repo's owner hears of it even when it is gone (a DROP SCHEMA leaves no rights to check).
  const scoped = who.key !== undefined && who.key.access !== 'full';
  if (!scoped && repo.slice(0, repo.indexOf('/')) === who.user) return true;
  const rights = control.peekRights(who) ?? (await control.rights(who));
  return rights.repos.has(repo);
}

/** One event, in the text/event-stream format. JSON has no raw line breaks, so `data` is one line. */
export function schemaEventText(change: SchemaChange): string {
  return `event: schema\ndata: ${JSON.stringify({ repo: change.repo, table: change.table, command: change.command })}\n\n`;
}

let openStreams = 0;

/** Event streams open now in this process (a stop's drain does not wait for them: they never end by themselves). */
export function openSchemaStreams(): number {
  return openStreams;
}

/**
 * Opens the caller's event stream: the `retry:` field first, then each change they may read, and
 * a comment line every `keepAliveMs`. Destroying the stream (the client left) unsubscribes it; the
 * revocation or expiry of the caller's key ends it.
 */
export function openSchemaStream(control: ControlPlane, who: Principal, log: Logger, opts: SchemaStreamOptions): Readable {
  const stream = new PassThrough();
  const user = who.user;
  // Rights may need a round trip: events go through one queue so that they keep their order.
  let queue = Promise.resolve();
  const write = (text: string) => {
    if (stream.destroyed) return;
    if (stream.readableLength + stream.writableLength > MAX_UNREAD_BYTES) {
      log.warn({ user }, 'schema event stream not read: closed');
      stream.destroy();
      return;
    }
    stream.write(text);
  };
  const unsubscribe = control.onSchemaChange((change) => {
    queue = queue
      .then(async () => {
        if (!stream.destroyed && (await mayRead(control, who, change.repo))) write(schemaEventText(change));
      })
      .catch((err: unknown) => log.warn({ err, user }, 'schema event not delivered: rights unknown'));
  });
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), opts.keepAliveMs);
  keepAlive.unref();
  const keyEnd = { cancel: () => stream.destroy() };
  control.keys.watch(who, keyEnd);
  openStreams++;
  stream.once('close', () => {
    openStreams--;
    clearInterval(keepAlive);
    unsubscribe();
    control.keys.unwatch(who, keyEnd);
  });
  write(`retry: ${opts.retryMs}\n\n`);
  return stream;
}
