import { EventEmitter } from 'node:events';
import { expect, test } from 'vitest';
import { firstOf } from '../../../src/ingest/events.js';

test('firstOf answers the first event and leaves no listener behind, however often it waits', async () => {
  const emitter = new EventEmitter();
  emitter.on('error', () => undefined);
  for (let i = 0; i < 50; i++) {
    const waiting = firstOf(emitter, ['drain', 'error']);
    emitter.emit(i % 2 ? 'drain' : 'error');
    expect(await waiting).toBe(i % 2 ? 'drain' : 'error');
  }
  expect(emitter.listenerCount('drain')).toBe(0);
  expect(emitter.listenerCount('error')).toBe(1);
});
