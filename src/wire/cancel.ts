/**
 * Cancel routing. Each client gets the proxy's own BackendKeyData (process id, secret); a
 * CancelRequest carrying them is forwarded to the upstream backend serving that client at that
 * moment, with the upstream's key, and nowhere when none serves it (see Relay.cancel). Unknown
 * or wrong keys are ignored, as Postgres does.
 *
 * A cancel arrives on a connection of its own, which may reach another process of the service
 * (several workers share the port) or another instance behind the same load balancer. So every
 * process id says which process gave it out: its high bits are the giver's *tag* (`TAG_BITS`
 * bits, 1–1023, unique among the live processes on the cluster: see cancel-channel.ts),
 * the low `SERIAL_BITS` bits count its clients. A cancel with this process's tag is answered
 * here (or dropped); any other goes to the peers (the cancel channel), where only the process
 * with that tag takes it, and only if the secret matches. Within one instance, workers are peers
 * like any other: one path for all, no second route that could deliver a cancel twice.
 *
 * A *signal* is what `pg_cancel_backend` and `pg_terminate_backend` given another client's
 * process id ask for (see src/policy/backend-pid.ts): it carries no secret, but the name of the
 * user whose backend asked, and it reaches the client only if that user is the client's, as
 * Postgres lets a role signal its own sessions. It takes the same path as a cancel.
 */
import { randomInt, timingSafeEqual } from 'node:crypto';
import { cancelRequests } from '../observe/metrics.js';

/** Bits of a process id that name the process that gave it out. */
export const TAG_BITS = 10;
/** Bits of a process id that number the clients of one process: 2M ids, reused once free. */
export const SERIAL_BITS = 21;
/** Tags are 1..MAX_TAG (the sign bit stays clear: libpq and drivers read the id as a signed int). */
export const MAX_TAG = 2 ** TAG_BITS - 1;
const MAX_SERIAL = 2 ** SERIAL_BITS - 1;

/** The tag of the process that gave out `processId`. */
export function tagOf(processId: number): number {
  return processId >>> SERIAL_BITS;
}

/** The other processes and instances of the service, which may hold the client a cancel is meant for. */
export interface CancelPeers {
  /**
   * This process's tag, unique among the live processes that share the peers. Read at each
   * use: it may change once, before the first key is given out (see cancel-channel.ts).
   */
  readonly tag: number;
  /** Passes on a cancel whose tag is not this process's. */
  forward(processId: number, secretKey: number): void;
  /** Passes on a signal whose tag is not this process's. */
  signal: SignalHandler;
  /** Takes the cancels and signals the peers pass on (for any tag: the registry keeps its own). */
  listen(handler: (processId: number, secretKey: number) => void, onSignal: SignalHandler): void;
}

/** What `pg_cancel_backend` / `pg_terminate_backend` of a client's process id ask for. */
export type SignalKind = 'cancel' | 'terminate';

/** Takes a signal of `user`'s for the client with `processId`. */
export type SignalHandler = (kind: SignalKind, processId: number, user: string) => void;

/** A live client, as the registry reaches it. */
export interface Target {
  /** The user the client logged in as: the only one whose signals reach it. */
  user: string;
  /** Cancels what the client runs now, on the backend serving it; resolves whether a cancel was sent. */
  cancel: () => Promise<boolean>;
  /** Ends the client's session as an administrator's command would (57P01). */
  terminate: () => void;
}

interface Entry extends Target {
  secret: number;
}

export class CancelRegistry {
  private readonly targets = new Map<number, Entry>();
  /** Without peers (a lone process), any tag will do. */
  private readonly ownTag = randomInt(1, MAX_TAG + 1);
  private serial = randomInt(1, MAX_SERIAL);

  constructor(private readonly peers?: CancelPeers) {
    peers?.listen(
      (processId, secretKey) => {
        if (tagOf(processId) === this.tag) void this.cancelHere(processId, secretKey);
      },
      (kind, processId, user) => {
        if (tagOf(processId) === this.tag) this.signalHere(kind, processId, user);
      },
    );
  }

  /** The tag of the process ids given out here. */
  get tag(): number {
    return this.peers?.tag ?? this.ownTag;
  }

  /** Registers a client; returns the key to send it. */
  register(target: Target): { processId: number; secretKey: number } {
    const tag = this.tag;
    if (!Number.isInteger(tag) || tag < 1 || tag > MAX_TAG) throw new RangeError(`cancel tag ${tag} is outside 1..${MAX_TAG}`);
    let processId: number;
    do {
      this.serial = this.serial >= MAX_SERIAL ? 1 : this.serial + 1;
      processId = tag * 2 ** SERIAL_BITS + this.serial;
    } while (this.targets.has(processId));
    const key = { processId, secretKey: randomInt(-(2 ** 31), 2 ** 31) };
    this.targets.set(processId, { ...target, secret: key.secretKey });
    return key;
  }

  unregister(processId: number): void {
    this.targets.delete(processId);
  }

  /**
   * Forwards a cancel for (processId, secretKey) to its upstream if it is this process's, or to
   * the peers if another process gave out that id; resolves whether it was sent from here.
   */
  cancel(processId: number, secretKey: number): Promise<boolean> {
    const tag = tagOf(processId);
    if (tag === 0 || tag > MAX_TAG) {
      cancelRequests.unknown.value++;
      return Promise.resolve(false); // no process gives out such ids: not worth passing on
    }
    if (tag === this.tag) return this.cancelHere(processId, secretKey);
    (this.peers ? cancelRequests.peer : cancelRequests.unknown).value++;
    this.peers?.forward(processId, secretKey);
    return Promise.resolve(false);
  }

  /**
   * Cancels what the client with `processId` runs, or ends its session, if `user` is the client's
   * user; here, or by the peers when another process gave out that id. Nothing happens for an
   * id of nobody's or of another user's client.
   */
  signal(kind: SignalKind, processId: number, user: string): void {
    const tag = tagOf(processId);
    if (tag === this.tag) this.signalHere(kind, processId, user);
    else if (tag > 0 && tag <= MAX_TAG) this.peers?.signal(kind, processId, user);
  }

  private signalHere(kind: SignalKind, processId: number, user: string): void {
    const target = this.targets.get(processId);
    if (target?.user !== user) return;
    if (kind === 'terminate') target.terminate();
    else void target.cancel();
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
    if (!this.matches(processId, secretKey)) {
      cancelRequests.unknown.value++;
      return Promise.resolve(false);
    }
    cancelRequests.forwarded.value++;
    return this.targets.get(processId)!.cancel();
  }
}
