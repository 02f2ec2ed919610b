/**
 * What the direct load sends to Postgres: the upload's bytes less the ranges the scanner marked
 * (blank lines; the first record when it is the header), with the values it rewrites replaced
 * (convert.ts): subarrays of the chunks, in one write per chunk (copied only where several).
 * A range is only known once its record has ended: a range that began in bytes already sent
 * cannot be taken back (a line holding just the NULL text, cut between two chunks after the
 * sample). So where it matters — with values to rewrite, and while replaying the sample or the
 * spool — the bytes of the record being read are held back until a later chunk ends it
 * (forward's `upTo`, the scanner's decidedTo).
 */
import { REPLACE, SKIP_FIRST } from './csv-scan.js';

/** Sends one pass over the upload to the COPY (a restart makes a new one). */
export class Forwarder {
  private list: number[] = [];
  private at = 0;
  private replacements: Buffer[] = [];
  private replaced = 0;
  /** Stream offset after the last byte sent. */
  private sentTo = 0;
  /** Bytes past the last `upTo`, sent with the next chunk; and their stream offset. */
  private held: Buffer | undefined;
  private heldAt = 0;

  constructor(
    private readonly header: boolean,
    private readonly send: (bytes: Buffer) => Promise<void>,
  ) {}

  /** Ranges from CsvScan.takeSkips(), in stream order, and the bytes of its REPLACE ranges (takeReplacements()). */
  skip(triples: number[], replacements: Buffer[] = []): void {
    if (this.at === this.list.length) {
      this.list = triples;
      this.at = 0;
    } else this.list.push(...triples);
    if (replacements.length === 0) return;
    if (this.replaced === this.replacements.length) {
      this.replacements = replacements;
      this.replaced = 0;
    } else this.replacements.push(...replacements);
  }

  /**
   * Sends `chunk` (at stream offset `base`) up to stream offset `upTo` less the skipped ranges and
   * with the replaced ones replaced, holding the rest for the next call; false if a skipped range
   * began in bytes sent already.
   */
  async forward(chunk: Buffer, base: number, upTo = base + chunk.length): Promise<boolean> {
    if (this.held !== undefined) {
      chunk = Buffer.concat([this.held, chunk]);
      base = this.heldAt;
      this.held = undefined;
    }
    const list = this.list;
    const end = Math.min(upTo, base + chunk.length);
    const out: Buffer[] = [];
    let pos = base;
    while (this.at < list.length) {
      const s = list[this.at]!;
      const e = list[this.at + 1]!;
      const kind = list[this.at + 2]!;
      if (s > end || (s === end && chunk.length > 0)) break;
      if (kind === SKIP_FIRST && !this.header) {
        this.at += 3;
        continue;
      }
      if (s < this.sentTo) return false;
      if (s > pos) {
        out.push(chunk.subarray(pos - base, s - base));
        this.sentTo = s;
      }
      if (kind === REPLACE) {
        // A replaced value has ended before `upTo`: the scanner knew it whole.
        out.push(this.replacements[this.replaced++]!);
        this.sentTo = pos = e;
        this.at += 3;
        continue;
      }
      pos = Math.max(pos, Math.min(e, end));
      if (e > end) break; // the range goes on into the next chunk
      this.at += 3;
    }
    if (pos < end) {
      out.push(chunk.subarray(pos - base, end - base));
      this.sentTo = end;
    }
    if (end < base + chunk.length) {
      this.held = chunk.subarray(end - base);
      this.heldAt = end;
    }
    if (out.length > 0) await this.send(out.length === 1 ? out[0]! : Buffer.concat(out));
    return true;
  }
}
