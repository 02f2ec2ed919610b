/**
 * Backpressure: a client that reads slower than the upstream answers. The upstream socket is
 * paused — Postgres then blocks on its send, and memory here stays bounded — until the client has
 * taken what was written. A client that takes nothing for the send timeout is closed (its
 * upstream session is then settled: statement cancelled, transaction rolled back, and reused).
 */
import type { Socket } from 'node:net';

/**
 * Bytes written to the client and not yet taken by it past which the upstream is paused: what
 * one slow client costs the proxy stays about this, whatever it asked for.
 */
export const CLIENT_HIGH_WATER = 1 << 20;

export class Backpressure {
  private timer: NodeJS.Timeout | undefined;

  /** @param onStuck the client read nothing for `ms`: close it */
  constructor(
    private readonly client: Socket,
    private readonly ms: number,
    private readonly onStuck: (pending: number) => void,
  ) {}

  /** Whether the upstream is held for the client now. */
  get holding(): boolean {
    return this.timer !== undefined;
  }

  /** Pauses `upstream` until the client has taken what it was sent (if it holds too much). */
  check(upstream: Socket): void {
    if (this.timer || this.client.writableLength <= CLIENT_HIGH_WATER) return;
    upstream.pause();
    let left = this.client.writableLength;
    const check = () => {
      if (this.client.writableLength < left) {
        left = this.client.writableLength; // slow, but reading
        this.timer = setTimeout(check, this.ms);
        return;
      }
      this.onStuck(left);
    };
    this.timer = setTimeout(check, this.ms);
    this.client.once('drain', () => {
      clearTimeout(this.timer);
      this.timer = undefined;
      if (!upstream.destroyed) upstream.resume();
    });
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
