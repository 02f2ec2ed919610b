// Bytes queued on connections: summed by direction from the sockets while they are open, shown in
// /metrics, and logged once past the limit and once when back under half of it.
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { registry } from '../../../src/observe/metrics.js';
import { queuedBytes, trackQueued, warnWhenQueued } from '../../../src/observe/queued.js';

function fakeSocket(writableLength: number) {
  return Object.assign(new EventEmitter(), { writableLength }) as unknown as Socket & { writableLength: number };
}

describe('queued bytes', () => {
  it('sums what open sockets hold by direction, in /metrics too, and forgets a socket once closed', async () => {
    const before = queuedBytes();
    const up = fakeSocket(1000);
    const down = fakeSocket(300);
    trackQueued('upstream', up);
    trackQueued('client', down);
    expect(queuedBytes()).toEqual({ upstream: before.upstream + 1000, client: before.client + 300 });
    const text = await registry.metrics();
    expect(text).toContain(`repobase_queued_bytes{direction="upstream"} ${before.upstream + 1000}`);
    up.emit('close');
    down.emit('close');
    expect(queuedBytes()).toEqual(before);
  });

  it('warns once past the limit and says so again when back under half', async () => {
    const lines: string[] = [];
    const log = { warn: (_: object, msg: string) => lines.push(`warn ${msg}`), info: (_: object, msg: string) => lines.push(`info ${msg}`) };
    const socket = fakeSocket(0);
    trackQueued('client', socket);
    const stop = warnWhenQueued(log, 10_000 + queuedBytes().upstream + queuedBytes().client, 10);
    const tick = () => new Promise((r) => setTimeout(r, 30));
    try {
      socket.writableLength = 20_000;
      await tick();
      await tick();
      expect(lines).toEqual(['warn bytes queued on connections passed queuedWarnBytes']);
      socket.writableLength = 0;
      await tick();
      expect(lines).toEqual(['warn bytes queued on connections passed queuedWarnBytes', 'info bytes queued on connections back under half of queuedWarnBytes']);
    } finally {
      stop();
      socket.emit('close');
    }
  });
});
