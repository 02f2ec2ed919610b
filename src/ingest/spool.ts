/**
 * A copy of an upload's text on disk, for the rare case where the direct load must read the
 * beginning again (a type guessed wrong, or a file Postgres would read differently: see
 * direct.ts). The file is unlinked as soon as it is open, so nothing is left behind whatever
 * happens to the process; the data lives in the page cache and on disk, not in the heap.
 */
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const READ_BYTES = 256 * 1024;

/** One upload's spool file: appended as the upload arrives, read back from any offset. */
export class Spool {
  /** Bytes appended so far. */
  size = 0;
  private pending: Promise<unknown> = Promise.resolve();
  private failure: unknown;

  private constructor(
    private readonly fh: FileHandle,
    private readonly path: string | undefined,
  ) {}

  /** A new, empty spool file in the system's temporary directory. */
  static async create(): Promise<Spool> {
    const dir = await mkdtemp(join(tmpdir(), 'repobase-upload-'));
    const path = join(dir, 'spool');
    const fh = await open(path, 'w+', 0o600);
    // Unlinked while open (POSIX): the space is freed when the handle closes, even on a crash.
    const removed = await rm(dir, { recursive: true, force: true }).then(
      () => true,
      () => false,
    );
    return new Spool(fh, removed ? undefined : dir);
  }

  /**
   * Appends `chunk` (which must not change afterwards). Writes go one at a time behind the
   * caller: this waits only for the write before, so parsing overlaps the disk.
   */
  async append(chunk: Buffer): Promise<void> {
    await this.pending;
    if (this.failure !== undefined) throw this.failure;
    const at = this.size;
    this.size += chunk.length;
    this.pending = this.fh.write(chunk, 0, chunk.length, at).catch((err: unknown) => {
      this.failure = err;
    });
  }

  /** The bytes in [from, to), in chunks, once every append before has reached the file. */
  async *read(from: number, to: number): AsyncGenerator<Buffer> {
    await this.pending;
    if (this.failure !== undefined) throw this.failure;
    for (let at = from; at < to; ) {
      const buf = Buffer.allocUnsafe(Math.min(READ_BYTES, to - at));
      const { bytesRead } = await this.fh.read(buf, 0, buf.length, at);
      if (bytesRead === 0) throw new Error(`spool file ended at ${at} of ${to} bytes`);
      at += bytesRead;
      yield buf.subarray(0, bytesRead);
    }
  }

  /** Closes (and so frees) the file. */
  async close(): Promise<void> {
    await this.pending;
    await this.fh.close().catch(() => undefined);
    if (this.path !== undefined) await rm(this.path, { recursive: true, force: true }).catch(() => undefined);
  }
}
