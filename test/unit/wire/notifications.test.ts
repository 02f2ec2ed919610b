// NotificationResponse as a client sees it: its channel without the user's prefix, and the process
// id of the client that sent it, learnt from the announcements of senders (src/wire/notifications.ts).
import { describe, expect, it } from 'vitest';
import { BackendCode } from '../../../src/protocol/index.js';
import { cstringSize, Writer } from '../../../src/protocol/writer.js';
import { SENDERS_PREFIX } from '../../../src/policy/index.js';
import { announcement, notificationForClient, Senders, sendersChannel } from '../../../src/wire/notifications.js';

function notification(pid: number, channel: string, payload: string): Buffer {
  return Writer.typed(BackendCode.NotificationResponse, 4 + cstringSize(channel, 'c') + cstringSize(payload, 'p')).int32(pid).cstring(channel).cstring(payload).done();
}

function read(frame: Buffer | undefined): { pid: number; channel: string; payload: string } | undefined {
  if (frame === undefined) return undefined;
  const end = frame.indexOf(0, 9);
  return { pid: frame.readInt32BE(5), channel: frame.toString('utf8', 9, end), payload: frame.toString('utf8', end + 1, frame.length - 1) };
}

describe('notifications', () => {
  it("each user has a senders channel of its own, outside every user's namespace", () => {
    expect(sendersChannel('alice')).toMatch(new RegExp(`^${SENDERS_PREFIX}[0-9a-f]{16}$`));
    expect(sendersChannel('alice')).not.toBe(sendersChannel('bob'));
    expect(Buffer.byteLength(sendersChannel('x'.repeat(63)))).toBeLessThanOrEqual(63);
  });

  it('announcements are taken in, never passed on; a notification shows the id of the client whose backend sent it', () => {
    const senders = new Senders(sendersChannel('alice'), 7001);
    const ctx = { senders, own: 500 };
    expect(notificationForClient(notification(600, senders.channel, announcement(600, 7002)), 'alice', new Set(), ctx)).toBeUndefined();
    expect(read(notificationForClient(notification(600, 'alice/news', 'hi'), 'alice', new Set(), ctx))).toEqual({ pid: 7002, channel: 'news', payload: 'hi' });
    // Its own backend: its own; a backend nobody announced: as Postgres says.
    expect(read(notificationForClient(notification(500, 'alice/news', 'me'), 'alice', new Set(), ctx))?.pid).toBe(7001);
    expect(read(notificationForClient(notification(650, 'alice/news', 'x'), 'alice', new Set(), ctx))?.pid).toBe(650);
    // The backend serves another client now: the latest announcement counts.
    notificationForClient(notification(600, senders.channel, announcement(600, 7003)), 'alice', new Set(), ctx);
    expect(read(notificationForClient(notification(600, 'alice/news', 'hi'), 'alice', new Set(), ctx))?.pid).toBe(7003);
    // It no longer serves it: what it sends next (a trigger's notification) is the backend's.
    notificationForClient(notification(600, senders.channel, announcement(600, 0)), 'alice', new Set(), ctx);
    expect(read(notificationForClient(notification(600, 'alice/news', 'hi'), 'alice', new Set(), ctx))?.pid).toBe(600);
  });

  it('without pooling, frames pass as they are but for the channel', () => {
    const frame = notification(600, 'alice/news', 'hi');
    expect(notificationForClient(frame, 'alice', new Set(['alice/news']))).toBe(frame);
    expect(read(notificationForClient(frame, 'alice', new Set()))).toEqual({ pid: 600, channel: 'news', payload: 'hi' });
  });
});
