import { describe, expect, it } from 'vitest';
import { CancelRegistry, type CancelPeers } from '../../../src/wire/cancel.js';

function withPeers(): { registry: CancelRegistry; forwarded: [number, number][]; deliver: (processId: number, secretKey: number) => void } {
  const forwarded: [number, number][] = [];
  let handler: (processId: number, secretKey: number) => void = () => undefined;
  const peers: CancelPeers = { forward: (p, s) => void forwarded.push([p, s]), listen: (h) => (handler = h) };
  return { registry: new CancelRegistry(peers), forwarded, deliver: (p, s) => handler(p, s) };
}

describe('cancel requests between workers', () => {
  it('keeps a cancel whose key is held here, and passes on any other', async () => {
    const { registry, forwarded } = withPeers();
    let asked = 0;
    const key = registry.register(() => {
      asked++;
      return undefined; // no upstream session yet: nothing to send
    });
    await registry.cancel(key.processId, key.secretKey);
    expect(asked).toBe(1);
    expect(forwarded).toEqual([]);
    // Another worker may have given out the same process id: a wrong secret goes on to the peers.
    await registry.cancel(key.processId, key.secretKey ^ 1);
    await registry.cancel(key.processId + 1, key.secretKey);
    expect(forwarded).toEqual([
      [key.processId, key.secretKey ^ 1],
      [key.processId + 1, key.secretKey],
    ]);
    expect(asked).toBe(1);
  });

  it('answers what the peers pass on only when the key matches, and never passes it back', () => {
    const { registry, forwarded, deliver } = withPeers();
    let asked = 0;
    const key = registry.register(() => {
      asked++;
      return undefined;
    });
    deliver(key.processId, key.secretKey ^ 1);
    deliver(key.processId + 1, key.secretKey);
    expect(asked).toBe(0);
    deliver(key.processId, key.secretKey);
    expect(asked).toBe(1);
    expect(forwarded).toEqual([]);
  });
});
