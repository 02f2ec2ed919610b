import { describe, expect, it } from 'vitest';
import { CancelRegistry, MAX_TAG, SERIAL_BITS, tagOf, type CancelPeers } from '../../../src/wire/cancel.js';

function withPeers(tag = 5): { registry: CancelRegistry; forwarded: [number, number][]; deliver: (processId: number, secretKey: number) => void } {
  const forwarded: [number, number][] = [];
  let handler: (processId: number, secretKey: number) => void = () => undefined;
  const peers: CancelPeers = { tag, forward: (p, s) => void forwarded.push([p, s]), listen: (h) => (handler = h) };
  return { registry: new CancelRegistry(peers), forwarded, deliver: (p, s) => handler(p, s) };
}

describe('cancel keys', () => {
  it('carry the tag of the process that gave them out, and stay positive int32', () => {
    for (const tag of [1, 5, MAX_TAG]) {
      const { registry } = withPeers(tag);
      for (let i = 0; i < 50; i++) {
        const key = registry.register(async () => false);
        expect(tagOf(key.processId)).toBe(tag);
        expect(key.processId).toBeGreaterThan(0);
        expect(key.processId).toBeLessThanOrEqual(2 ** 31 - 1);
      }
    }
    expect(() => withPeers(0).registry.register(async () => false)).toThrow(RangeError);
    expect(() => withPeers(MAX_TAG + 1).registry.register(async () => false)).toThrow(RangeError);
  });
});

describe('cancel requests between processes', () => {
  it('answers a cancel with its own tag here, and passes on one with another tag', async () => {
    const { registry, forwarded } = withPeers();
    let asked = 0;
    const key = registry.register(() => {
      asked++;
      return Promise.resolve(false); // no backend serves it: nothing to send
    });
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
    const key = registry.register(() => {
      asked++;
      return Promise.resolve(false);
    });
    deliver(key.processId, key.secretKey ^ 1);
    deliver(key.processId + 1, key.secretKey);
    deliver(6 * 2 ** SERIAL_BITS + (key.processId % 2 ** SERIAL_BITS), key.secretKey); // same serial, other tag
    expect(asked).toBe(0);
    deliver(key.processId, key.secretKey);
    expect(asked).toBe(1);
    expect(forwarded).toEqual([]);
  });
});
