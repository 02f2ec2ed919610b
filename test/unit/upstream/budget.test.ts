// The process's budget of backends: slots taken and given back, a line of waiters in order, and
// idle backends of any pool closed for a waiter, longest idle first (src/upstream/budget.ts).
import { describe, expect, it } from 'vitest';
import { BackendBudget } from '../../../src/upstream/budget.js';

/** A pool with idle backends (of a user who holds no slot) that went idle at the given times; closing one gives its slot back. */
function pool(budget: BackendBudget, idleSince: number[]) {
  const closed: number[] = [];
  budget.register({
    oldestIdle: (of) => (idleSince.length === 0 || (of !== undefined && !of('anybody')) ? undefined : Math.min(...idleSince)),
    closeOldestIdle: () => {
      const oldest = Math.min(...idleSince);
      idleSince.splice(idleSince.indexOf(oldest), 1);
      closed.push(oldest);
      budget.give();
    },
  });
  return closed;
}

describe('backend budget', () => {
  it('hands out up to its size, then lines waiters up in order', () => {
    const budget = new BackendBudget(2);
    expect([budget.take(), budget.take(), budget.take()]).toEqual([true, true, false]);
    const got: string[] = [];
    budget.wait(() => got.push('first'));
    const leave = budget.wait(() => got.push('second'));
    budget.wait(() => got.push('third'));
    expect(budget.waiting).toBe(3);
    leave();
    budget.give();
    budget.give();
    expect(got).toEqual(['first', 'third']);
    expect(budget.inUse).toBe(2);
    expect(budget.pressed).toBe(false);
  });

  it('closes the longest-idle backend of any pool for a waiter', () => {
    const budget = new BackendBudget(3);
    for (let i = 0; i < 3; i++) budget.take();
    const a = pool(budget, [30, 10]);
    const b = pool(budget, [20]);
    const got: number[] = [];
    budget.wait(() => got.push(1));
    budget.wait(() => got.push(2));
    expect(got).toEqual([1, 2]);
    expect(a).toEqual([10]);
    expect(b).toEqual([20]);
  });

  it('closes an idle backend only if it went idle before a given time, when asked so', () => {
    const budget = new BackendBudget(2);
    budget.take();
    budget.take();
    const a = pool(budget, [500, 900]);
    budget.reclaim(400);
    expect(a).toEqual([]);
    expect(budget.take()).toBe(false);
    budget.reclaim(600);
    expect(a).toEqual([500]);
    expect(budget.take()).toBe(true);
  });
});

describe('reserved share of the budget', () => {
  it('keeps the last tenth for users below their share: one who holds nothing gets a backend at once', () => {
    const budget = new BackendBudget(20); // 2 reserved
    for (let i = 0; i < 18; i++) expect(budget.take('noisy')).toBe(true);
    expect(budget.take('noisy')).toBe(false); // the reserve is not for a user above its share
    expect(budget.take('quiet')).toBe(true);
    expect(budget.take('third')).toBe(true);
    expect(budget.take('fourth')).toBe(false); // all taken
    expect(budget.heldBy('noisy')).toBe(18);
  });

  it('gives a slot that comes back to a waiter below its share before the longest waiter', () => {
    const budget = new BackendBudget(10); // 1 reserved
    for (let i = 0; i < 9; i++) budget.take('noisy');
    budget.take('quiet');
    const got: string[] = [];
    budget.wait(() => got.push('noisy'), 'noisy');
    budget.wait(() => got.push('other'), 'other');
    budget.give('noisy');
    expect(got).toEqual(['other']);
  });
});

describe('backends taken back', () => {
  it("closes an idle backend of a user above their share for a waiter first, however briefly idle", () => {
    const budget = new BackendBudget(4);
    const idle: { user: string; since: number }[] = [];
    const closed: string[] = [];
    budget.register({
      oldestIdle: (of) => idle.filter((i) => !of || of(i.user)).reduce<number | undefined>((m, i) => (m === undefined || i.since < m ? i.since : m), undefined),
      closeOldestIdle: (of) => {
        const candidates = idle.filter((i) => !of || of(i.user)).sort((a, b) => a.since - b.since);
        const victim = candidates[0]!;
        idle.splice(idle.indexOf(victim), 1);
        closed.push(victim.user);
        budget.give(victim.user);
      },
    });
    budget.take('light');
    idle.push({ user: 'light', since: 1 }); // idle longest
    for (let i = 0; i < 3; i++) budget.take('heavy');
    idle.push({ user: 'heavy', since: Date.now() }); // just idle
    budget.wait(() => undefined, 'new');
    expect(closed).toEqual(['heavy']); // 3 of 4 is above a share of 2
  });
});
