/**
 * The REST queries running in this process that their clients named (`X-Query-Id`), so that
 * `POST /query/<id>/cancel` can cancel them. The cancel request may reach another worker process
 * than the query (requests are spread over the workers): a name not running here is asked of
 * the peers, as the wire front end passes on CancelRequests.
 */

/** The other processes of the service, which may run the query a cancel names. */
export interface QueryCancelPeers {
  /** Asks the other processes to cancel `user`'s query `id`; resolves whether one of them ran it. */
  cancel(user: string, id: string): Promise<boolean>;
  /** Takes the cancels the other processes ask for; `handler` answers whether the query ran here. */
  listen(handler: (user: string, id: string) => boolean): void;
}

import type { CancelFlag } from '../upstream/cancel-flag.js';

export class RunningQueries {
  /**
   * By role (the user's own, or a scoped key's: a key cancels its own queries only) and id; a
   * client may reuse an id, and a cancel then ends every query of that name.
   */
  private readonly running = new Map<string, Set<CancelFlag>>();

  constructor(private readonly peers?: QueryCancelPeers) {
    peers?.listen((user, id) => this.cancelHere(user, id));
  }

  /** Registers `user`'s query `id`, raised by a cancel; returns the function that unregisters it. */
  add(user: string, id: string, query: CancelFlag): () => void {
    const key = keyOf(user, id);
    const set = this.running.get(key) ?? new Set();
    set.add(query);
    this.running.set(key, set);
    return () => {
      set.delete(query);
      if (set.size === 0 && this.running.get(key) === set) this.running.delete(key);
    };
  }

  /** Cancels `user`'s query `id` here or in a peer; false when none of that user runs with that id. */
  async cancel(user: string, id: string): Promise<boolean> {
    if (this.cancelHere(user, id)) return true;
    return this.peers ? this.peers.cancel(user, id) : false;
  }

  private cancelHere(user: string, id: string): boolean {
    const set = this.running.get(keyOf(user, id));
    if (!set) return false;
    for (const query of set) query.cancel();
    return true;
  }
}

/** Role names never hold a '/', so the key is unambiguous. */
function keyOf(user: string, id: string): string {
  return `${user}/${id}`;
}
