/**
 * A small bounded cache with expiry, for values the control plane can re-read. `generation`
 * changes on every invalidation, so a value read before an invalidation is not stored after it.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();
  private gen = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  get generation(): number {
    return this.gen;
  }

  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires < Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Stores `value` unless the cache was invalidated since `generation` was read. */
  set(key: K, value: V, generation = this.gen): void {
    if (generation !== this.gen) return;
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expires: Date.now() + this.ttlMs });
  }

  delete(key: K): void {
    this.gen++;
    this.entries.delete(key);
  }

  clear(): void {
    this.gen++;
    this.entries.clear();
  }
}
