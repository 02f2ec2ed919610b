import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/shared/config.js';
import { isMessage, workerCount, workerShare } from '../../../src/workers/messages.js';

describe('workers', () => {
  it('counts one worker per core for 0, else what is configured', () => {
    expect(workerCount(loadConfig({}, { workers: 0 }))).toBe(availableParallelism());
    expect(workerCount(loadConfig({}, { workers: 3 }))).toBe(3);
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
