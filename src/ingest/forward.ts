/**
 * What the direct load sends to Postgres: the upload's bytes less the ranges the scanner marked
 * (blank lines; the first record when it is the header), as subarrays of the chunks, no copy.
 * A range is only known once its line has ended; one that began in bytes already sent (a line
 * holding just the NULL text, cut between two chunks after the sample) cannot be taken back.
 */
import { SKIP_FIRST } from './csv-scan.js';

/** Sends one pass over the upload to the COPY (a restart makes a new one). */
export class Forwarder {
  private list: number[] = [];
  private at = 0;
  /** Stream offset after the last byte sent. */
  private sentTo = 0;

  constructor(
    private readonly header: boolean,
    private readonly send: (bytes: Buffer) => Promise<void>,
  ) {}

  /** Ranges from CsvScan.takeSkips(), in stream order. */
  skip(triples: number[]): void {
    if (this.at === this.list.length) {
      this.list = triples;
      this.at = 0;
    } else this.list.push(...triples);
  }

  /** Sends `chunk` (at stream offset `base`) less the skipped ranges; false if one began in bytes sent already. */
  async forward(chunk: Buffer, base: number): Promise<boolean> {
    const list = this.list;
    const end = base + chunk.length;
    let pos = base;
    while (this.at < list.length) {
      const s = list[this.at]!;
      const e = list[this.at + 1]!;
      if (s > end || (s === end && chunk.length > 0)) break;
      if (list[this.at + 2] === SKIP_FIRST && !this.header) {
        this.at += 3;
        continue;
      }
      if (s < this.sentTo) return false;
      if (s > pos) await this.sent(chunk.subarray(pos - base, s - base), s);
      pos = Math.max(pos, Math.min(e, end));
      if (e > end) break; // the range goes on into the next chunk
      this.at += 3;
    }
    if (pos < end) await this.sent(chunk.subarray(pos - base), end);
    return true;
  }

  private async sent(bytes: Buffer, to: number): Promise<void> {
    this.sentTo = to;
    await this.send(bytes);
  }
}
