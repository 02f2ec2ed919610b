/**
 * Flow control from Postgres back to the client: the proxy reads a client's socket only while
 * what it has read can go somewhere. The client's bytes are written to its backend's socket as
 * they come; once that socket holds more than `UPSTREAM_HIGH_WATER` not yet taken by Postgres (a
 * COPY FROM STDIN faster than the table is written, a pipelined batch behind a slow statement),
 * the client's socket is paused until the backend has taken it all. TCP then holds the client
 * back, as it would hold it back against Postgres directly: a client costs the proxy about this
 * much whatever it sends (PgBouncer's fixed buffer per client, in the shape of a Node socket).
 *
 * The relay stops reading for other reasons too (hold.ts: frames waiting for a decision or a
 * backend; large-messages.ts: no room in the budget). Each says why it stops and why it goes on;
 * the socket reads again when no reason is left.
 */
import type { Socket } from 'node:net';

/** Bytes queued towards a backend past which the client is no longer read (per client). */
export const UPSTREAM_HIGH_WATER = 256 * 1024;

/** Why a client's socket is not read. */
export const Stop = {
  /** Frames wait in the hold (a decision, a backend, room for a large message). */
  Hold: 1,
  /** Its backend's socket holds more than the high-water mark. */
  Upstream: 2,
} as const;
export type Stop = (typeof Stop)[keyof typeof Stop];

export class Intake {
  private stops = 0;
  /** The backend socket waited on to drain, while `Stop.Upstream` holds. */
  private draining: Socket | undefined;

  constructor(private readonly client: Socket) {}

  /** Whether the client is not being read now (for any reason). */
  get stopped(): boolean {
    return this.stops !== 0;
  }

  stop(why: Stop): void {
    if (this.stops & why) return;
    if (this.stops === 0) this.client.pause();
    this.stops |= why;
  }

  go(why: Stop): void {
    if (!(this.stops & why)) return;
    this.stops &= ~why;
    if (this.stops === 0 && !this.client.destroyed) this.client.resume();
  }

  /**
   * After the client's frames were written to `upstream`: stops reading the client while the
   * backend has more than the high-water mark to take, until it has taken everything (or closed).
   */
  check(upstream: Socket | undefined): void {
    if (upstream === undefined || this.draining !== undefined || upstream.writableLength <= UPSTREAM_HIGH_WATER) return;
    this.draining = upstream;
    this.stop(Stop.Upstream);
    upstream.once('drain', this.drained);
    upstream.once('close', this.drained);
  }

  /** The backend took what it was sent (or is gone): the client is read again, if nothing else stops it. */
  private readonly drained = (): void => {
    const socket = this.draining;
    if (socket === undefined) return;
    this.draining = undefined;
    socket.off('drain', this.drained);
    socket.off('close', this.drained);
    this.go(Stop.Upstream);
  };

  /** The client left: no wait on a backend outlives it. */
  close(): void {
    this.drained();
  }
}
