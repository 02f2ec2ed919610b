/**
 * Slows down password guessing, for both front ends: each failure under a key (a client
 * address, a user name) doubles the wait before that key's next failure is answered
 * (100 ms … 5 s); a success or 15 quiet minutes reset it. Successes are never delayed.
 */
export class FailureThrottle {
  private readonly failures = new Map<string, { count: number; last: number }>();

  /** Records a failure under `key`; resolves after the delay it earned. */
  async failed(key: string): Promise<void> {
    const now = Date.now();
    const prev = this.failures.get(key);
    const count = prev && now - prev.last < 15 * 60_000 ? prev.count + 1 : 1;
    // A flood of distinct keys must not grow the map without bound; forgetting is the safe side.
    if (this.failures.size > 100_000) this.failures.clear();
    this.failures.set(key, { count, last: now });
    const delay = Math.min(5_000, 100 * 2 ** (count - 1));
    await new Promise((r) => setTimeout(r, delay));
  }

  succeeded(key: string): void {
    this.failures.delete(key);
  }
}
