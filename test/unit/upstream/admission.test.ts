// Admission control with fair queuing (src/upstream/admission.ts): slots taken and given back,
// the order in which waiting users are let in, the reserved share, parked backends, each user's
// own limit and time budget, and the 53300 of a wait past its time.
import { describe, expect, it } from 'vitest';
import { Admission, newHold, SLOWED_WEIGHT, type AdmissionOptions, type Hold, type Tenant } from '../../../src/upstream/admission.js';

let pids = 1000;

function admission(opts: Partial<AdmissionOptions> & { max: number }) {
  const limits = new Map<string, { active: number; timeBudgetMs: number }>();
  const waited: [string, number][] = [];
  const a = new Admission({
    reserve: 0,
    limitsOf: (user) => limits.get(user) ?? { active: 0, timeBudgetMs: 0 },
    onWaited: (user, ms) => waited.push([user, ms]),
    ...opts,
  });
  /** Takes a slot at once and holds it with a backend of its own. */
  const run = (user: string): Hold | undefined => {
    const t = a.enter(user);
    if (t === undefined) return undefined;
    const hold = newHold(pids++);
    a.hold(t, hold);
    return hold;
  };
  return { a, limits, waited, run };
}

/** Queues one transaction of `user`, noting in `order` when it is let in (and holding its slot then). */
function queue(a: Admission, user: string, order: string[], holds: Hold[], ms = 10_000): Promise<void> {
  return a.wait(user, ms).then((t: Tenant) => {
    order.push(user);
    const hold = newHold(pids++);
    a.hold(t, hold);
    holds.push(hold);
  });
}

const settle = () => new Promise((r) => setImmediate(r));

describe('admission', () => {
  it('ends a wait of waitFor in a microtask of its own, after the leave that let it in is done', async () => {
    const { a, run } = admission({ max: 1 });
    const first = run('alice')!;
    const seen: string[] = [];
    a.waitFor('bob', 10_000, (err, t) => seen.push(t === undefined ? `failed ${String(err)}` : `in ${t.user}`));
    a.leave(first);
    seen.push('left');
    await Promise.resolve();
    expect(seen).toEqual(['left', 'in bob']);
    expect(a.states()).toEqual({ running: 1, parked: 0, waiting: 0, usersWaiting: 0 });
  });

  it('lets transactions in at once up to max, and no further', () => {
    const { a, run } = admission({ max: 2 });
    const first = run('alice');
    expect(first).toBeDefined();
    expect(run('alice')).toBeDefined();
    expect(run('alice')).toBeUndefined();
    a.leave(first!);
    expect(run('alice')).toBeDefined();
    expect(a.states()).toEqual({ running: 2, parked: 0, waiting: 0, usersWaiting: 0 });
  });

  it("lets the other user's next transaction in before the second of a user with 50 queued", async () => {
    const { a, run } = admission({ max: 1 });
    const running = run('many')!;
    const order: string[] = [];
    const holds: Hold[] = [];
    const waits = Array.from({ length: 50 }, () => queue(a, 'many', order, holds));
    waits.push(queue(a, 'one', order, holds));
    expect(a.states().waiting).toBe(51);
    a.leave(running);
    await settle();
    expect(order).toEqual(['one']);
    a.leave(holds.shift()!);
    await settle();
    expect(order).toEqual(['one', 'many']);
    // From then on they take turns while both wait; "one" has nothing more, so "many" goes on alone.
    while (holds.length > 0) {
      a.leave(holds.shift()!);
      await settle();
    }
    await Promise.all(waits);
    expect(order.length).toBe(51);
  });

  it('takes turns between users that both keep transactions queued', async () => {
    const { a, run } = admission({ max: 1 });
    const first = run('a')!;
    const order: string[] = [];
    const holds: Hold[] = [];
    for (let i = 0; i < 3; i++) void queue(a, 'a', order, holds);
    for (let i = 0; i < 3; i++) void queue(a, 'b', order, holds);
    a.leave(first);
    for (let i = 0; i < 6; i++) {
      await settle();
      a.leave(holds.shift()!);
    }
    expect(order).toEqual(['b', 'a', 'b', 'a', 'b', 'a']);
  });

  it("lets a user's transaction whose wait ends first in first (a REST statement before a wire transaction of longer patience)", async () => {
    const { a, run } = admission({ max: 1 });
    const first = run('u')!;
    const order: string[] = [];
    const wire = a.wait('u', 30_000).then(() => order.push('wire'));
    const restish = a.wait('u', 10_000).then(() => order.push('rest'));
    a.leave(first);
    await restish;
    expect(order).toEqual(['rest']);
    a.close();
    await wire.catch(() => undefined);
  });

  it('lets a user with nothing running in at once past max, within the reserve; the busy user waits', () => {
    const { a, run } = admission({ max: 2, reserve: 2 });
    expect(run('noisy')).toBeDefined();
    expect(run('noisy')).toBeDefined();
    expect(run('noisy')).toBeUndefined(); // at max, and above its share (1 of 2 with quiet about)
    expect(run('quiet')).toBeDefined(); // below its share: the reserve
    expect(run('quiet')).toBeUndefined(); // at its share of 1
    expect(run('third')).toBeDefined();
    expect(run('fourth')).toBeUndefined(); // the reserve is used up
    expect(a.states().running).toBe(4);
  });

  it("holds each user to their own limit of transactions at once, and fails a wait past its time with 53300", async () => {
    const { a, limits, run, waited } = admission({ max: 10 });
    limits.set('capped', { active: 1, timeBudgetMs: 0 });
    expect(run('capped')).toBeDefined();
    expect(run('capped')).toBeUndefined();
    expect(run('other')).toBeDefined();
    const err = await a.wait('capped', 150).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: '53300' });
    expect((err as Error).message).toContain('capped');
    expect((err as { hint: string }).hint).toContain('at most 1 transactions at once');
    expect(waited.some(([u, ms]) => u === 'capped' && ms >= 100)).toBe(true);
    expect(a.states().waiting).toBe(0);
  });

  it('reads a changed limit at once: a waiter let in when the limit rises', async () => {
    const { a, limits, run } = admission({ max: 10 });
    limits.set('u', { active: 1, timeBudgetMs: 0 });
    run('u');
    const order: string[] = [];
    const waiting = queue(a, 'u', order, []);
    await settle();
    expect(order).toEqual([]);
    limits.set('u', { active: 2, timeBudgetMs: 0 });
    a.refresh(['u']);
    await waiting;
    expect(order).toEqual(['u']);
  });

  it('does not count backends Postgres says use no CPU, and lets waiters in for them', async () => {
    let idle = new Set<number>();
    const { a, run } = admission({ max: 2, sampleParked: async () => idle });
    const sleeping = [run('noisy')!, run('noisy')!];
    const order: string[] = [];
    const waiting = queue(a, 'noisy', order, []);
    expect(a.states()).toMatchObject({ running: 2, waiting: 1 });
    idle = new Set(sleeping.map((h) => h.pid));
    await waiting; // let in once a sample has seen the two parked
    expect(order).toEqual(['noisy']);
    expect(a.states()).toMatchObject({ running: 1, parked: 2, waiting: 0 });
    a.leave(sleeping[0]!);
    expect(a.states()).toMatchObject({ running: 1, parked: 1 });
    a.close();
  });

  it('sees in a sample every slot still held, after others were given back in any order, and none given back', async () => {
    let idle = new Set<number>();
    const { a, run } = admission({ max: 5, sampleParked: async () => idle });
    const h = [0, 1, 2, 3, 4].map(() => run('u')!);
    for (const i of [1, 0, 3]) a.leave(h[i]!); // h[2] and h[4] still held
    const again = run('u')!;
    run('u');
    run('u');
    expect(a.states()).toMatchObject({ running: 5 });
    const order: string[] = [];
    const waiting = queue(a, 'u', order, []);
    idle = new Set([h[2]!.pid, h[4]!.pid, again.pid, h[0]!.pid]); // h[0] was given back: not to be counted
    await waiting;
    expect(a.states()).toMatchObject({ running: 3, parked: 3, waiting: 0 });
    a.leave(h[4]!);
    a.leave(h[2]!);
    expect(a.states()).toMatchObject({ running: 3, parked: 1 });
    a.close();
  });

  it('asks Postgres only about slots held since the last look: none while every backend took its slot since', async () => {
    let asked = 0;
    const { a, run } = admission({ max: 1, sampleParked: async () => (asked++, new Set<number>()) });
    const first = run('u')!;
    const order: string[] = [];
    const holds: Hold[] = [];
    const both = Promise.all([queue(a, 'u', order, holds), queue(a, 'u', order, holds)]);
    a.leave(first); // the next one takes the slot after the ticker was set: busy, not asked about
    await settle();
    expect(holds).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 150));
    expect(asked).toBe(0);
    await expect.poll(() => asked > 0, { timeout: 2_000, interval: 20 }).toBe(true); // held across a whole tick now
    a.leave(holds[0]!);
    await both;
    a.close();
  });

  it('slows a user past their time budget: a lower weight in the queue, not a refusal', async () => {
    const { a, limits, run } = admission({ max: 4 });
    limits.set('heavy', { active: 0, timeBudgetMs: 1 });
    const first = run('heavy')!;
    await new Promise((r) => setTimeout(r, 5));
    a.leave(first); // 5 ms held of a 1 ms budget: slowed for the rest of the minute
    const t = (a as unknown as { tenants: Map<string, Tenant> }).tenants.get('heavy')!;
    expect(t.weight).toBe(SLOWED_WEIGHT);
    run('heavy');
    run('light');
    run('light');
    const last = run('heavy')!;
    const order: string[] = [];
    const left = queue(a, 'heavy', order, []).catch((e: unknown) => e); // still waiting at the close
    void queue(a, 'light', order, []);
    a.leave(last);
    await settle();
    // heavy runs 1 at a quarter weight (4), light runs 2 (2): light first, though heavy asked first.
    expect(order).toEqual(['light']);
    a.close();
    expect(await left).toMatchObject({ code: '57P01' });
  });
});
