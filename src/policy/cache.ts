// A bounded cache of analyses by query text that keeps the recently used ones: an approximate LRU
// (CLOCK, "second chance"). A hit only marks its entry used; an insert past the bounds walks from
// the oldest entry (a Map iterates in insertion order), moving a used one to the newest end with
// its mark cleared and evicting the first unused one. A true LRU re-inserts its entry on every hit,
// and V8 then rebuilds the Map's table every few hits: V8's heap profiler counted ≈ 150 bytes per
// REST request of those tables outliving scavenges, none since
// (bench/notes/2026-11-27-rest-scavenge-survivors.md). Hits and misses are counted for the
// metrics (a plain number each: this is the policy's hot path).
import { policyCacheHit, policyCacheMiss } from '../observe/metrics.js';

interface Entry<V> {
  value: V;
  /** Hit since the eviction walk last passed it. */
  used: boolean;
}

export class RecentlyUsedCache<V> {
  private readonly map = new Map<string, Entry<V>>();
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
    const entry = this.map.get(key);
    if (entry === undefined) {
      policyCacheMiss.value++;
      return undefined;
    }
    policyCacheHit.value++;
    entry.used = true;
    return entry.value;
  }

  set(key: string, value: V): void {
    if (this.maxEntries <= 0 || key.length > this.maxKeyChars) return;
    const known = this.map.get(key);
    if (known !== undefined) {
      known.value = value;
      known.used = true;
      return;
    }
    // Room first, then the new entry as the newest: the walk moves used entries behind it
    // otherwise, and it would be the first unused one. Each used entry passed is moved once with
    // its mark cleared, so the walk ends within a round.
    while (this.map.size >= this.maxEntries || this.chars + key.length > this.maxChars) {
      const oldest = this.map.entries().next();
      if (oldest.done === true) break;
      const [k, entry] = oldest.value;
      this.map.delete(k);
      if (entry.used) {
        entry.used = false;
        this.map.set(k, entry);
      } else {
        this.chars -= k.length;
      }
    }
    this.map.set(key, { value, used: false });
    this.chars += key.length;
  }
}
