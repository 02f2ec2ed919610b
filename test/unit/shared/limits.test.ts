// Per-user limits (src/shared/limits.ts, src/shared/units.ts): the defaults with an admin's
// overrides, a worker's share, and sizes and durations as people write them.
import { describe, expect, it } from 'vitest';
import { NO_LIMITS, loginSettings, shareOf, withOverrides, type UserLimits } from '../../../src/shared/limits.js';
import { formatSize, parseDuration, parseSize } from '../../../src/shared/units.js';

const defaults: UserLimits = { connections: 1000, active: 0, statementTimeoutMs: 60_000, idleInTransactionTimeoutMs: 300_000, storageBytes: 0, timeBudgetMs: 0 };

describe('limits', () => {
  it('takes an override where one is set, and the default where it is null or missing', () => {
    expect(withOverrides(defaults, { connections: 200, active: null, storageBytes: 10 * 2 ** 30 })).toEqual({ ...defaults, connections: 200, storageBytes: 10 * 2 ** 30 });
    expect(withOverrides(defaults, undefined)).toBe(defaults);
  });

  it("gives each worker an even share, rounded up, of what is counted per process; 0 stays no limit", () => {
    expect(shareOf({ ...defaults, active: 5, timeBudgetMs: 1001 }, 2)).toEqual({ ...defaults, connections: 500, active: 3, timeBudgetMs: 501 });
    expect(shareOf(NO_LIMITS, 3)).toEqual(NO_LIMITS);
    expect(shareOf({ ...defaults, active: 1 }, 4).active).toBe(1);
  });

  it("are what a user's backends log in with: Postgres' own timeouts", () => {
    expect(loginSettings(defaults)).toEqual({ statement_timeout: '60000', idle_in_transaction_session_timeout: '300000' });
  });

  it('reads sizes and durations as people write them, and nothing else', () => {
    expect(parseSize('10GiB')).toBe(10 * 2 ** 30);
    expect(parseSize('500MB')).toBe(500_000_000);
    expect(parseSize('1024')).toBe(1024);
    expect(parseSize('lots')).toBeUndefined();
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('1500')).toBe(1500);
    expect(parseDuration('soon')).toBeUndefined();
    expect(parseDuration('-1s')).toBeUndefined();
    expect(formatSize(10 * 2 ** 30)).toBe('10 GiB');
  });
});
