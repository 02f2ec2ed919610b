// CPU weight by share (src/upstream/heavy-users.ts), looked at by the fair queue's ticker
// (src/upstream/admission.ts): which users are heavy, that each of their backends is lowered once,
// and that the weight comes back a second after they are no longer heavy. The weights themselves
// (nice values on an embedded Postgres) are tested in test/integration/serve-embedded.test.ts.
import { describe, expect, it } from 'vitest';
import { Admission, newHold, type Hold } from '../../../src/upstream/admission.js';
import { HeavyUsers } from '../../../src/upstream/heavy-users.js';

let pids = 5000;

function setup(max: number) {
  const lowered: number[] = [];
  const restored: number[] = [];
  const heavy = new HeavyUsers({ lower: (pid) => lowered.push(pid), restore: (pid) => restored.push(pid) });
  const a = new Admission({ max, reserve: max, limitsOf: () => ({ active: 0, timeBudgetMs: 0 }), heavy });
  const run = (user: string): Hold => {
    const t = a.enter(user)!;
    const hold = newHold(pids++);
    a.hold(t, hold);
    return hold;
  };
  return { a, heavy, lowered, restored, run };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('heavy users', () => {
  it('lowers, once each, the backends of a user running more than a quarter of the slots while another user takes part', async () => {
    const { a, lowered, restored, run } = setup(8);
    const noisy = [run('noisy'), run('noisy'), run('noisy')]; // 3 > 8 / 4
    a.leave(run('quiet')); // a transaction of another user since the last look
    await expect.poll(() => lowered.length, { timeout: 2_000, interval: 20 }).toBe(3);
    expect(lowered.sort()).toEqual(noisy.map((h) => h.pid).sort());
    const quiet = run('quiet');
    await sleep(250); // two more looks: nothing lowered twice, the quiet user never
    expect(lowered).toHaveLength(3);
    expect(lowered).not.toContain(quiet.pid);
    expect(restored).toEqual([]);
    a.close();
  });

  it('leaves a user alone on the service as it is, however many transactions it runs', async () => {
    const { a, lowered, run } = setup(8);
    for (let i = 0; i < 8; i++) run('solo');
    await sleep(350);
    expect(lowered).toEqual([]);
    a.close();
  });

  it('counts another user only while they take part: a user who ran once long ago does not keep the heavy one lowered', async () => {
    const { a, heavy, lowered, restored, run } = setup(8);
    a.leave(run('quiet')); // once, then nothing more
    for (let i = 0; i < 3; i++) run('noisy');
    await expect.poll(() => lowered.length, { timeout: 2_000, interval: 20 }).toBe(3); // quiet took part since the (first) look
    await expect.poll(() => restored.length, { timeout: 3_000, interval: 20 }).toBe(3); // alone since: no longer heavy
    expect(heavy.any).toBe(false);
    a.close();
  });

  it('leaves users running no more than a quarter of the slots each as they are', async () => {
    const { a, lowered, run } = setup(8);
    for (const user of ['a', 'a', 'b', 'b', 'c', 'c']) run(user);
    a.leave(run('a')); // a third of a's for a moment: the looks begin
    await sleep(350);
    expect(lowered).toEqual([]);
    a.close();
  });

  it('gives the weight back once the user has not been heavy for a second, and goes on looking while any is lowered', async () => {
    const { a, heavy, lowered, restored, run } = setup(8);
    const noisy = [run('noisy'), run('noisy'), run('noisy')];
    const quiet = run('quiet');
    await expect.poll(() => lowered.length, { timeout: 2_000, interval: 20 }).toBe(3);
    a.leave(noisy[0]!); // 2: no longer heavy
    const light = performance.now();
    await sleep(500);
    expect(restored).toEqual([]);
    await expect.poll(() => restored.length, { timeout: 3_000, interval: 20 }).toBe(3);
    expect(performance.now() - light).toBeGreaterThanOrEqual(900);
    expect(restored.sort()).toEqual(lowered.sort());
    expect(heavy.any).toBe(false);
    expect(noisy.every((h) => !h.lowered)).toBe(true);
    a.leave(quiet);
    a.close();
  });
});
