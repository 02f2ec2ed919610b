/**
 * Bytes the process holds queued on its sockets: written towards upstream backends and not yet
 * taken by Postgres, or written towards clients (wire and HTTP) and not yet taken by them. Flow
 * control keeps each connection's share small (the wire front end stops reading a client past
 * 256 KiB towards its backend, and stops reading a backend past 1 MiB towards its client), so the
 * sum is what many connections cost at once: `/metrics` shows it
 * (`repobase_queued_bytes{direction}`), beside prom-client's heap, external and resident memory,
 * and a log line says when it passes `queuedWarnBytes`.
 *
 * The sockets are read only when asked (a scrape, the once-a-second look), never per write.
 */
import type { Socket } from 'node:net';
import client from 'prom-client';
import { registry } from './metrics.js';

export type Direction = 'upstream' | 'client';

const sockets: Record<Direction, Set<Socket>> = { upstream: new Set(), client: new Set() };

/** Counts what `socket` holds queued towards `direction` until it closes. */
export function trackQueued(direction: Direction, socket: Socket): void {
  const set = sockets[direction];
  set.add(socket);
  socket.once('close', () => set.delete(socket));
}

/** Bytes queued now on the tracked sockets, by direction. */
export function queuedBytes(): Record<Direction, number> {
  const sum = (set: Set<Socket>) => {
    let n = 0;
    for (const s of set) n += s.writableLength;
    return n;
  };
  return { upstream: sum(sockets.upstream), client: sum(sockets.client) };
}

new client.Gauge({
  name: 'repobase_queued_bytes',
  help: "Bytes the process holds written and not yet taken, by direction: upstream (towards Postgres backends of the wire front end and POST /query/), client (towards wire and HTTP clients). With the process' heap and resident memory, what its connections cost now.",
  labelNames: ['direction'],
  registers: [registry],
  collect() {
    for (const [direction, n] of Object.entries(queuedBytes())) this.set({ direction }, n);
  },
});

interface WarnLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Looks at the queued bytes once a second: a warning when their sum passes `limit`, and a line
 * when it is back under half of it. Returns the stop.
 */
export function warnWhenQueued(log: WarnLog, limit: number, everyMs = 1_000): () => void {
  let over = false;
  const timer = setInterval(() => {
    const q = queuedBytes();
    const total = q.upstream + q.client;
    if (!over && total > limit) {
      over = true;
      const m = process.memoryUsage();
      log.warn({ queuedUpstream: q.upstream, queuedClient: q.client, heapUsed: m.heapUsed, external: m.external, rss: m.rss, limit }, 'bytes queued on connections passed queuedWarnBytes');
    } else if (over && total < limit / 2) {
      over = false;
      log.info({ queuedUpstream: q.upstream, queuedClient: q.client }, 'bytes queued on connections back under half of queuedWarnBytes');
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
