// The budget for large client messages: taken in order, given back once judged, never a deadlock.
import { describe, expect, it } from 'vitest';
import { FrameReader, buildQuery } from '../../../src/protocol/index.js';
import { LARGE_MESSAGE_BYTES, LargeMessageGate, MessageBudget } from '../../../src/wire/large-messages.js';

const MiB = 1024 * 1024;

describe('MessageBudget', () => {
  it('hands out in order of asking, and a message larger than the budget goes alone', async () => {
    const budget = new MessageBudget(4 * MiB);
    expect(budget.take(3 * MiB)).toBe(true);
    const order: string[] = [];
    const b = budget.take(2 * MiB);
    const c = budget.take(MiB); // would fit, but waits behind b
    expect(b).toBeInstanceOf(Promise);
    expect(c).toBeInstanceOf(Promise);
    void (b as Promise<void>).then(() => order.push('b'));
    void (c as Promise<void>).then(() => order.push('c'));
    budget.give(3 * MiB);
    await Promise.resolve();
    await Promise.resolve();
    expect(order).toEqual(['b', 'c']);
    expect(budget.inUse).toBe(3 * MiB);
    budget.give(2 * MiB);
    budget.give(MiB);
    expect(budget.take(10 * MiB)).toBe(true); // alone: larger than the budget
    budget.give(10 * MiB);
    expect(budget.inUse).toBe(0);
  });
});

describe('LargeMessageGate', () => {
  it('takes when a large message begins, gives back once it was read and judged', async () => {
    const budget = new MessageBudget(3 * MiB);
    const reader = new FrameReader({ source: 'frontend', startup: false, maxMessageBytes: 64 * MiB });
    const gate = new LargeMessageGate(budget, reader);
    const frame = buildQuery(`SELECT '${'x'.repeat(2 * MiB)}'`);
    const frames: Buffer[] = [];
    reader.push(frame.subarray(0, 1000), (_c, f) => frames.push(f));
    expect(gate.afterChunk(() => undefined)).toBeUndefined();
    expect(budget.inUse).toBe(frame.length);
    // A second client's large message waits while the first is held.
    const other = new FrameReader({ source: 'frontend', startup: false, maxMessageBytes: 64 * MiB });
    const otherGate = new LargeMessageGate(budget, other);
    other.push(frame.subarray(0, 1000), () => undefined);
    const wait = otherGate.afterChunk(() => undefined);
    expect(wait).toBeInstanceOf(Promise);
    // The first message completes; its decision is still being made.
    let judge!: () => void;
    const judged = new Promise<void>((r) => (judge = r));
    reader.push(frame.subarray(1000), (_c, f) => frames.push(f));
    expect(frames).toHaveLength(1);
    expect(gate.afterChunk(() => judged)).toBeUndefined();
    expect(budget.inUse).toBe(frame.length);
    judge();
    await wait;
    expect(budget.inUse).toBe(frame.length); // now the second client's
    // Small messages never touch the budget.
    reader.push(buildQuery('SELECT 1'), () => undefined);
    expect(gate.afterChunk(() => undefined)).toBeUndefined();
    otherGate.close(undefined);
    expect(budget.inUse).toBe(0);
    expect(LARGE_MESSAGE_BYTES).toBe(MiB);
  });
});
