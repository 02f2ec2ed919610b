/**
 * Cancel routing. Each client gets the proxy's own BackendKeyData (process id, secret); a
 * CancelRequest carrying them is forwarded to the upstream backend of that client's session,
 * with the upstream's key. Unknown or wrong keys are ignored, as Postgres does.
 *
 * A cancel arrives on a connection of its own, which may reach another process of the service
 * (several workers share the port): a key no client here holds is passed to the peers, and the
 * one holding it forwards it.
 */
import { randomInt, timingSafeEqual } from 'node:crypto';
import { cancelUpstream, type CancelTarget } from '../upstream/session.js';

/** The other processes of the service, which may hold the client a cancel is meant for. */
export interface CancelPeers {
  /** Passes on a cancel that matched no client of this process. */
  forward(processId: number, secretKey: number): void;
  /** Takes the cancels the peers pass on. */
  listen(handler: (processId: number, secretKey: number) => void): void;
}

interface Target {
  secret: number;
  upstream: () => CancelTarget | undefined;
}

export class CancelRegistry {
  private readonly targets = new Map<number, Target>();
  private next = randomInt(1, 2 ** 30);

  constructor(private readonly peers?: CancelPeers) {
    peers?.listen((processId, secretKey) => void this.cancelHere(processId, secretKey));
  }

  /** Registers a client; returns the key to send it. */
  register(upstream: Target['upstream']): { processId: number; secretKey: number } {
    do {
      this.next = this.next >= 2 ** 31 - 1 ? 1 : this.next + 1;
    } while (this.targets.has(this.next));
    const key = { processId: this.next, secretKey: randomInt(-(2 ** 31), 2 ** 31) };
    this.targets.set(key.processId, { secret: key.secretKey, upstream });
    return key;
  }

  unregister(processId: number): void {
    this.targets.delete(processId);
  }

  /** Forwards a cancel for (processId, secretKey) to its upstream, or to the peers when no client here has that key. */
  cancel(processId: number, secretKey: number): Promise<boolean> {
    // Process ids of different workers may coincide: only id and secret together say "here".
    if (this.peers && !this.matches(processId, secretKey)) {
      this.peers.forward(processId, secretKey);
      return Promise.resolve(false);
    }
    return this.cancelHere(processId, secretKey);
  }

  /** Whether a live client here has this key; the secret compared in constant time. */
  private matches(processId: number, secretKey: number): boolean {
    const target = this.targets.get(processId);
    const a = Buffer.alloc(4);
    const b = Buffer.alloc(4);
    a.writeInt32BE(secretKey);
    b.writeInt32BE(target?.secret ?? ~secretKey);
    return target !== undefined && timingSafeEqual(a, b);
  }

  /** Forwards a cancel if it matches a live client of this process; resolves when sent. */
  private cancelHere(processId: number, secretKey: number): Promise<boolean> {
    const up = this.matches(processId, secretKey) ? this.targets.get(processId)!.upstream() : undefined;
    return up ? cancelUpstream(up) : Promise.resolve(false);
  }
}
