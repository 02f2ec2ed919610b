import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { busyLines, busyWhileIdle } from '../../../bench/lib/idle.js';

const children: ChildProcess[] = [];

/** A Node process running `code`, once it has started. */
async function child(code: string): Promise<number> {
  const c = spawn(process.execPath, ['-e', `process.stdout.write('up\\n'); ${code}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(c);
  await once(c.stdout!, 'data');
  return c.pid!;
}

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

describe('the idle check', () => {
  it('names a process that is busy with no load, and not one that waits', async () => {
    const spinning = await child('for (;;) {}');
    const waiting = await child('setInterval(() => undefined, 60_000)');
    const found = await busyWhileIdle('wire', new Map([['spinning', spinning], ['waiting', waiting]]), 500);
    expect(found.map((b) => b.target)).toEqual(['spinning']);
    expect(found[0]!.cores).toBeGreaterThan(0.3);
    expect(busyLines(found).join('\n')).toMatch(/spinning used \d+ % of a core before wire/);
    expect(busyLines([])).toEqual([]);
  });

  it('does not name a process whose work ends by itself after the first look', async () => {
    const settling = await child('const until = Date.now() + 400; while (Date.now() < until) {} setInterval(() => undefined, 60_000)');
    const spinning = await child('for (;;) {}');
    const found = await busyWhileIdle('web', new Map([['settling', settling], ['spinning', spinning]]), 500, 3);
    expect(found.map((b) => b.target)).toEqual(['spinning']);
  });
});
