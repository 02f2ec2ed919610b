/**
 * Memory for large client messages. A 64 MiB `INSERT … VALUES` costs its bytes while it is read,
 * and a few times that while the policy judges it; ten clients sending one each at once would
 * cost ten times as much. Each process has one budget (`pgLargeMessagesBytes`): a client starting
 * a message of 1 MiB or more takes its size from the budget, and when it does not fit, the client
 * waits in line with its socket paused (TCP holds the rest of its message back) until messages
 * ahead of it are judged. Memory thus stays near the budget whatever the number of clients; a
 * message larger than the whole budget goes through alone.
 */
import type { FrameReader } from '../protocol/index.js';

/** Messages from this size on take from the budget; smaller ones pass untouched (the hot path). */
export const LARGE_MESSAGE_BYTES = 1024 * 1024;

/** One process's budget, handed out in order. */
export class MessageBudget {
  private used = 0;
  private readonly line: { bytes: number; grant: () => void }[] = [];

  constructor(private readonly capacity: number) {}

  /** Takes `bytes`: true at once, or a promise resolved when they were taken, in order of asking. */
  take(bytes: number): true | Promise<void> {
    if (this.line.length === 0 && this.fits(bytes)) {
      this.used += bytes;
      return true;
    }
    return new Promise((grant) => this.line.push({ bytes, grant }));
  }

  give(bytes: number): void {
    this.used -= bytes;
    while (this.line.length > 0 && this.fits(this.line[0]!.bytes)) {
      const next = this.line.shift()!;
      this.used += next.bytes;
      next.grant();
    }
  }

  /** What is taken now (the metrics). */
  get inUse(): number {
    return this.used;
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= this.capacity;
  }
}

/** One client's share: what it holds for the large message it is reading or that is being judged. */
export class LargeMessageGate {
  private held = 0;

  constructor(
    private readonly budget: MessageBudget,
    private readonly reader: FrameReader,
  ) {}

  /**
   * After each chunk read: gives back what a message that has been read in full held (once the
   * work `judged` returns settles, when its decision is still being made: asked only then), and
   * takes for a large message the chunk began. Returns a promise to wait on when the budget is spent (the caller pauses the
   * client until it resolves), else undefined.
   */
  afterChunk(judged: () => Promise<unknown> | undefined): Promise<void> | undefined {
    const total = this.reader.partialTotal;
    if (this.held > 0 && total !== this.held) this.close(judged());
    if (total < LARGE_MESSAGE_BYTES || this.held > 0) return undefined;
    this.held = total;
    const taken = this.budget.take(total);
    return taken === true ? undefined : taken;
  }

  /** The message was read in full, or the client left: what it held goes back (once `judged` settles). */
  close(judged: Promise<unknown> | undefined): void {
    if (this.held === 0) return;
    const bytes = this.held;
    this.held = 0;
    if (judged === undefined) this.budget.give(bytes);
    else void judged.finally(() => this.budget.give(bytes));
  }
}
