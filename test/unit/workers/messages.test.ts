import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/shared/config.js';
import { defaultWorkers, isMessage, workerCount, workerShare } from '../../../src/workers/messages.js';

describe('workers', () => {
  it('counts one worker per core but one (at least one) for 0, else what is configured', () => {
    expect([1, 2, 3, 4, 8, 16].map(defaultWorkers)).toEqual([1, 1, 2, 3, 7, 15]);
    expect(workerCount(loadConfig({}, { workers: 0 }))).toBe(Math.max(1, availableParallelism() - 1));
    expect(workerCount(loadConfig({}, { workers: 3 }))).toBe(3);
    expect(workerCount(loadConfig({}, { workers: 1 }))).toBe(1);
  });

  it('shares the service-wide limits evenly, rounded up, never below one', () => {
    const config = loadConfig({}, { pgMaxConnections: 20000, pgSessionsPerUser: 5, upstreamPoolMax: 1 });
    const share = workerShare(config, 3);
    expect(share).toMatchObject({ pgMaxConnections: 6667, pgSessionsPerUser: 2, upstreamPoolMax: 1 });
    expect(share.rateLimitMax).toBe(config.rateLimitMax); // counted per worker, as documented
    expect(workerShare(config, 1)).toEqual(config);
  });

  it('knows a message by its kind', () => {
    expect(isMessage({ kind: 'stop' })).toBe(true);
    expect(isMessage('stop')).toBe(false);
    expect(isMessage(null)).toBe(false);
  });
});
