// A bounded LRU of analyses by query text. A Map iterates in insertion order, so re-inserting on
// a hit keeps the least recently used entry first, where eviction takes it. Hits and misses are
// counted for the metrics (a plain number each: this is the policy's hot path).
import { policyCacheHit, policyCacheMiss } from '../observe/metrics.js';

export class LruCache<V> {
  private readonly map = new Map<string, V>();
  private chars = 0;

  /**
   * @param maxEntries entries kept (0 disables the cache)
   * @param maxChars total length of the keys kept
   * @param maxKeyChars longer keys are not kept: huge one-off statements (bulk INSERTs) would
   *   push out the many small repeated ones
   */
  constructor(
    private readonly maxEntries: number,
    private readonly maxChars: number,
    private readonly maxKeyChars: number,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(key: string): V | undefined {
    const value = this.map.get(key);
    (value === undefined ? policyCacheMiss : policyCacheHit).value++;
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    if (this.maxEntries <= 0 || key.length > this.maxKeyChars) return;
    if (this.map.delete(key)) this.chars -= key.length;
    this.map.set(key, value);
    this.chars += key.length;
    while (this.map.size > this.maxEntries || this.chars > this.maxChars) {
      const oldest = this.map.keys().next();
      if (oldest.done === true) break;
      this.map.delete(oldest.value);
      this.chars -= oldest.value.length;
    }
  }
}
