import { describe, expect, it } from 'vitest';
import { CancelRegistry, MAX_TAG, SERIAL_BITS, tagOf, type CancelPeers, type SignalKind, type Target } from '../../../src/wire/cancel.js';

type Signal = [SignalKind, number, string];

function withPeers(tag = 5) {
  const forwarded: [number, number][] = [];
  const signalled: Signal[] = [];
  let handler: (processId: number, secretKey: number) => void = () => undefined;
  let onSignal: (...s: Signal) => void = () => undefined;
  const peers: CancelPeers = {
    tag,
    forward: (p, s) => void forwarded.push([p, s]),
    signal: (...s) => void signalled.push(s),
    listen: (h, s) => {
      handler = h;
      onSignal = s;
    },
  };
  return { registry: new CancelRegistry(peers), forwarded, signalled, deliver: (p: number, s: number) => handler(p, s), deliverSignal: (...s: Signal) => onSignal(...s) };
}

/** A client of `user` whose cancels answer `cancel`, counting what reaches it. */
function client(cancel: () => Promise<boolean> = async () => false, user = 'alice'): Target & { cancels: number; terminations: number } {
  const c = {
    user,
    cancels: 0,
    terminations: 0,
    cancel: () => {
      c.cancels++;
      return cancel();
    },
    terminate: () => void c.terminations++,
  };
  return c;
}

describe('cancel keys', () => {
  it('carry the tag of the process that gave them out, and stay positive int32', () => {
    for (const tag of [1, 5, MAX_TAG]) {
      const { registry } = withPeers(tag);
      for (let i = 0; i < 50; i++) {
        const key = registry.register(client());
        expect(tagOf(key.processId)).toBe(tag);
        expect(key.processId).toBeGreaterThan(0);
        expect(key.processId).toBeLessThanOrEqual(2 ** 31 - 1);
      }
    }
    expect(() => withPeers(0).registry.register(client())).toThrow(RangeError);
    expect(() => withPeers(MAX_TAG + 1).registry.register(client())).toThrow(RangeError);
  });
});

describe('cancel requests between processes', () => {
  it('answers a cancel with its own tag here, and passes on one with another tag', async () => {
    const { registry, forwarded } = withPeers();
    let asked = 0;
    const key = registry.register(
      client(() => {
        asked++;
        return Promise.resolve(false); // no backend serves it: nothing to send
      }),
    );
    await registry.cancel(key.processId, key.secretKey);
    expect(asked).toBe(1);
    // Its own tag with a wrong secret, or an id nobody here holds: dropped, not passed on.
    await registry.cancel(key.processId, key.secretKey ^ 1);
    await registry.cancel(key.processId + 1, key.secretKey);
    expect(asked).toBe(1);
    expect(forwarded).toEqual([]);
    const other = 6 * 2 ** SERIAL_BITS + 17;
    await registry.cancel(other, 42);
    expect(forwarded).toEqual([[other, 42]]);
    // Ids no process gives out (tag 0, negative) go nowhere.
    await registry.cancel(17, 42);
    await registry.cancel(-5, 42);
    expect(forwarded).toEqual([[other, 42]]);
  });

  it('answers what the peers pass on only when tag and secret match, and never passes it back', () => {
    const { registry, forwarded, deliver } = withPeers();
    let asked = 0;
    const key = registry.register(
      client(() => {
        asked++;
        return Promise.resolve(false);
      }),
    );
    deliver(key.processId, key.secretKey ^ 1);
    deliver(key.processId + 1, key.secretKey);
    deliver(6 * 2 ** SERIAL_BITS + (key.processId % 2 ** SERIAL_BITS), key.secretKey); // same serial, other tag
    expect(asked).toBe(0);
    deliver(key.processId, key.secretKey);
    expect(asked).toBe(1);
    expect(forwarded).toEqual([]);
  });
});

describe('signals (pg_cancel_backend / pg_terminate_backend of a client id)', () => {
  it('reach a client here only from its own user, and go to the peers for another tag', () => {
    const { registry, signalled } = withPeers();
    const alice = client();
    const key = registry.register(alice);
    registry.signal('terminate', key.processId, 'bob');
    registry.signal('cancel', key.processId, 'bob');
    expect([alice.cancels, alice.terminations]).toEqual([0, 0]);
    registry.signal('cancel', key.processId, 'alice');
    expect([alice.cancels, alice.terminations]).toEqual([1, 0]);
    registry.signal('terminate', key.processId, 'alice');
    expect([alice.cancels, alice.terminations]).toEqual([1, 1]);
    registry.signal('terminate', key.processId + 1, 'alice'); // nobody's id here: dropped
    expect(signalled).toEqual([]);
    const other = 6 * 2 ** SERIAL_BITS + 17;
    registry.signal('terminate', other, 'alice');
    registry.signal('terminate', 17, 'alice'); // tag 0: no process gives it out
    expect(signalled).toEqual([['terminate', other, 'alice']]);
  });

  it('from the peers are taken with this tag and the client\'s user only', () => {
    const { registry, deliverSignal } = withPeers();
    const alice = client();
    const key = registry.register(alice);
    deliverSignal('terminate', key.processId, 'bob');
    deliverSignal('terminate', 6 * 2 ** SERIAL_BITS + (key.processId % 2 ** SERIAL_BITS), 'alice');
    expect(alice.terminations).toBe(0);
    deliverSignal('terminate', key.processId, 'alice');
    expect(alice.terminations).toBe(1);
    registry.unregister(key.processId);
    deliverSignal('terminate', key.processId, 'alice');
    expect(alice.terminations).toBe(1);
  });
});
