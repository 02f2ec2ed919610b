import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, lazyChild } from '../../../src/shared/logger.js';

function capture(level: 'info' | 'warn'): { log: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const log = createLogger(level, sink);
  return { log, lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('lazyChild', () => {
  it('writes lines with its bindings, and those of its own children', () => {
    const { log, lines } = capture('info');
    const req = lazyChild(log, { reqId: 'r1' });
    req.info({ n: 1 }, 'first');
    const user = req.child({ user: 'alice' });
    user.warn('second');
    expect(lines()).toMatchObject([
      { reqId: 'r1', n: 1, msg: 'first' },
      { reqId: 'r1', user: 'alice', msg: 'second' },
    ]);
  });

  it('makes no child while nothing is written, and keeps the parent level', () => {
    const { log, lines } = capture('warn');
    let made = 0;
    const child = log.child;
    log.child = function (this: typeof log, ...args: Parameters<typeof log.child>) {
      made++;
      return child.apply(this, args);
    } as typeof log.child;
    const req = lazyChild(log, { reqId: 'r2' }).child({ user: 'bob' });
    req.info('below the level');
    req.debug('below the level');
    expect(made).toBe(0);
    expect(req.isLevelEnabled('info')).toBe(false);
    expect(req.isLevelEnabled('error')).toBe(true);
    req.error({ err: new Error('boom') }, 'failed');
    expect(made).toBe(2); // both levels of binding, made by the first line written
    expect(lines()).toMatchObject([{ reqId: 'r2', user: 'bob', msg: 'failed', err: { message: 'boom' } }]);
  });

  it('redacts secrets as the parent does', () => {
    const { log, lines } = capture('info');
    lazyChild(log, { reqId: 'r3' }).info({ password: 'hunter2' }, 'login');
    expect(lines()[0]).toMatchObject({ password: '[redacted]' });
  });
});
