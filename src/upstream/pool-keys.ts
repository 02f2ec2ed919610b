/**
 * The keys of a session pool's sessions: one per (role, start-up parameters), since a session is
 * only ever handed to a user of the role it logged in as, with the settings it logged in with.
 */

/** The role a key is of. */
export function roleOf(key: string): string {
  return key.slice(0, key.indexOf('\0'));
}

/** The prefix every key of `role` starts with. */
export function rolePrefix(role: string): string {
  return role + '\0';
}

export class PoolKeys {
  /**
   * Parameter sets are few and long-lived (one per client settings): the key of each (role,
   * parameter set) is made once, so the hot path looks pools up with a string whose hash V8 has
   * already computed instead of concatenating and hashing a new one per request.
   */
  private readonly keys = new WeakMap<object, Map<string, string>>();
  /** The latest key made, and what it was made of. */
  private lastRole = '';
  private lastParams: object | undefined;
  private lastKey = '';

  key(role: string, params: Readonly<Record<string, string>>): string {
    // The same caller asks again and again (a client's every transaction): its key is at hand.
    if (params === this.lastParams && role === this.lastRole) return this.lastKey;
    let byRole = this.keys.get(params);
    if (byRole === undefined) {
      byRole = new Map();
      this.keys.set(params, byRole);
    }
    let key = byRole.get(role);
    if (key === undefined) {
      if (byRole.size > 10_000) byRole.clear();
      key = rolePrefix(role) + JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1)));
      byRole.set(role, key);
    }
    this.lastRole = role;
    this.lastParams = params;
    this.lastKey = key;
    return key;
  }
}
