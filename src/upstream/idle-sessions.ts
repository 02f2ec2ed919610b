/**
 * A session pool's idle sessions, by key (role and start-up parameters): each list in the order
 * the sessions went idle, the most recently used last.
 */
import { ignore, type UpstreamSession } from './session.js';

export interface Idle {
  session: UpstreamSession;
  since: number;
  /** Set while the session is lent (see `SessionPool.lend`): tells its holder it is taken from it. */
  revoke?: (() => void) | undefined;
}

export class IdleSessions {
  /**
   * A list emptied stays until the sweep: a client's backend lent and taken back at every
   * transaction would otherwise delete and add its key in the map each time.
   */
  private readonly lists = new Map<string, Idle[]>();
  /** Set by `take`: the session it was asked to prefer is not idle under that key. */
  preferMissing = false;

  /** Whether some session is idle under `key`. */
  has(key: string): boolean {
    const list = this.lists.get(key);
    return list !== undefined && list.length > 0;
  }

  /**
   * Takes an idle session of `key`, alive: `prefer` if it is idle, else the one used last. Its
   * `revoke` is called and its sink reset; sessions found dead on the way are removed and passed
   * to `dead`.
   */
  take(key: string, prefer: UpstreamSession | undefined, dead: (session: UpstreamSession) => void): UpstreamSession | undefined {
    this.preferMissing = false;
    const list = this.lists.get(key);
    if (list === undefined || list.length === 0) return undefined;
    let i = list.length - 1;
    if (prefer !== undefined && list[i]!.session !== prefer) {
      let at = i - 1;
      while (at >= 0 && list[at]!.session !== prefer) at--;
      if (at >= 0) i = at;
      else this.preferMissing = true;
    }
    while (list.length > 0) {
      const entry = removeAt(list, i);
      const session = entry.session;
      i = list.length - 1;
      entry.revoke?.();
      session.sink = ignore;
      if (!session.socket.destroyed) return session;
      dead(session);
    }
    return undefined;
  }

  put(key: string, entry: Idle): void {
    const list = this.lists.get(key);
    if (list === undefined) this.lists.set(key, [entry]);
    else list.push(entry);
  }

  /** Removes `session` from the idle ones of `key` (its `revoke` is not called); false when it is not there. */
  remove(key: string, session: UpstreamSession): boolean {
    const list = this.lists.get(key);
    if (list === undefined) return false;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]!.session !== session) continue;
      removeAt(list, i);
      return true;
    }
    return false;
  }

  /** Idle sessions whose keys start with `prefix` (one role's). */
  countOf(prefix: string): number {
    let n = 0;
    for (const [key, list] of this.lists) if (key.startsWith(prefix)) n += list.length;
    return n;
  }

  get size(): number {
    let n = 0;
    for (const list of this.lists.values()) n += list.length;
    return n;
  }

  /** The longest-idle session (of keys starting with `prefix`, or that `of` accepts, when given), and its key. */
  oldest(prefix?: string, of?: (key: string) => boolean): { key: string; idle: Idle } | undefined {
    let oldest: { key: string; idle: Idle } | undefined;
    for (const [key, list] of this.lists) {
      if ((prefix !== undefined && !key.startsWith(prefix)) || (of !== undefined && !of(key))) continue;
      const first = list[0];
      if (first !== undefined && (oldest === undefined || first.since < oldest.idle.since)) oldest = { key, idle: first };
    }
    return oldest;
  }

  /** Removes the longest-idle session (of keys starting with `prefix`, or that `of` accepts), calls its `revoke`, and returns it with its key. */
  takeOldest(prefix?: string, of?: (key: string) => boolean): { key: string; idle: Idle } | undefined {
    const oldest = this.oldest(prefix, of);
    if (oldest === undefined) return undefined;
    const list = this.lists.get(oldest.key)!;
    list.shift();
    oldest.idle.revoke?.();
    return oldest;
  }

  /** Removes the sessions idle since before `cutoff`, or dead, and passes each to `close` (after its `revoke`). */
  sweep(cutoff: number, close: (key: string, session: UpstreamSession) => void): void {
    for (const [key, list] of this.lists) {
      const keep = list.filter((i) => {
        if (i.since >= cutoff && !i.session.socket.destroyed) return true;
        i.revoke?.();
        close(key, i.session);
        return false;
      });
      if (keep.length) this.lists.set(key, keep);
      else this.lists.delete(key);
    }
  }

  /** Removes every idle session and passes each to `close` (after its `revoke`). */
  drain(close: (key: string, session: UpstreamSession) => void): void {
    const all = [...this.lists];
    this.lists.clear();
    for (const [key, list] of all) {
      for (const i of list) {
        i.revoke?.();
        close(key, i.session);
      }
    }
  }

  /** Every idle session. */
  *sessions(): Iterable<UpstreamSession> {
    for (const list of this.lists.values()) for (const { session } of list) yield session;
  }
}

/** Removes and returns `list[i]` in place (no array made, as `splice` makes one: a client's every transaction comes here). */
function removeAt(list: Idle[], i: number): Idle {
  const entry = list[i]!;
  for (let j = i + 1; j < list.length; j++) list[j - 1] = list[j]!;
  list.pop();
  return entry;
}
