/**
 * The direct load of a CSV/TSV upload: Postgres parses the file and converts its values itself,
 * straight into the final table, while Node checks the same bytes and infers the types from
 * every value (csv-scan.ts) on the other core.
 *
 * Why (measured on the 200 MB file of bench/ingest.ts, 2 cores): `psql \copy` into a typed table
 * takes 2.9 s. The old path — csv-parse, string classification and COPY text encoding in Node
 * (~24 MB/s, 8+ s), a COPY into a TEMP text table (1.8 s), then `INSERT … SELECT` with casts
 * after the whole file (3.4 s) — reached 0.25× of psql. Letting Postgres parse the CSV into the
 * text table and casting afterwards still costs 5.2 s of Postgres time (an `ALTER … TYPE` rewrite
 * instead costs 3.7 s), so the casts had to go: the table gets its types before the first row.
 * Result: ~66 MB/s against psql's ~70 (0.93–0.97×), Postgres' COPY being the bottleneck; the
 * scan (~180 MB/s) runs beside it on the other core.
 *
 * Inference needs every value, so the types are guessed from the first MiB (SAMPLE_BYTES) and
 * confirmed as the rest streams by; the upload is spooled to a temporary file meanwhile (spool.ts;
 * its cost was within the noise, under 0.1 s). A column whose guess a later value contradicts
 * makes the load start over from the spool with a better guess (at most MAX_RESTARTS times, then
 * every column as text): one restart 60% into the benchmark file costs 1.4 s (0.6×). Columns
 * loaded as text that turn out typed (no value in the sample, dates that read both month first and
 * day first there) are converted at the end with one `ALTER TABLE`. The values Postgres would
 * misread (all-digit days, thousands separators: convert.ts) are rewritten on their way to COPY:
 * the scan notes where they are, the forwarder puts the new bytes in their place, and a record is
 * sent once the scan has seen all of it (the ALTER rewrite they would otherwise need cost ~3×
 * the COPY on a 100 MB file). Whatever Postgres would read differently from csv.ts
 * (incompatible CSV, a header guessed wrong, an error from Postgres, e.g. an append value that
 * does not fit) hands the whole upload, from the spool, to the row-by-row path instead, whose
 * answers (errors with their line included) are the reference.
 *
 * Columns whose type the caller chose (overrides.ts) are created with it and never restarted:
 * Postgres checks their values as they stream in, and a value it refuses goes row by row too,
 * to be named with its line; so does a value not written in the layout the caller chose.
 */
import type pg from 'pg';
import { PgError, SqlState } from '../shared/errors.js';
import { rewriterOf, type Rewriter } from './convert.js';
import { CsvScan } from './csv-scan.js';
import { DirectTable } from './direct-table.js';
import { appendTargets, existingColumns, type Target } from './finish.js';
import { Forwarder } from './forward.js';
import { requiredBits } from './layout-check.js';
import type { ChosenType } from './infer.js';
import { columnNames } from './names.js';
import { assertWidth, renames, resolveColumns } from './overrides.js';
import type { Reading } from './read.js';
import { Spool } from './spool.js';
import type { Format, ImportOutcome, ParseOptions, Progress, SqlType, Written } from './types.js';

/** Bytes read before the types are guessed and the COPY starts. */
export const SAMPLE_BYTES = 1 << 20;
/** Wrong guesses started over with better ones; after that, every column is loaded as text. */
const MAX_RESTARTS = 3;

/** A CSV/TSV upload as direct.ts takes it: valid UTF-8 chunks with a known delimiter. */
export interface CsvUpload {
  format: Format;
  delimiter: string;
  bytes: AsyncIterable<Buffer>;
}

/** The row-by-row load, given the whole upload's text again. */
export type Fallback = (bytes: AsyncIterable<Buffer>) => Promise<ImportOutcome>;

/**
 * Whether Postgres' COPY can read a CSV with these options: a one-byte delimiter and one NULL
 * text, holding neither the delimiter, a quote nor a line break (Postgres' own rules).
 */
export function canLoadDirect(delimiter: string, nullValues: readonly string[]): boolean {
  const nullText = nullValues.length === 1 ? nullValues[0]! : undefined;
  return delimiter.length === 1 && delimiter.charCodeAt(0) < 128 && nullText !== undefined && !nullText.includes(delimiter) && !/["\r\n]/.test(nullText);
}

/** A line to skip (a NULL text alone on it) that began in bytes Postgres already has. */
const SKIPPED_LATE = 'a skipped line across chunks';
/** A value not written as the caller said its column is: the row-by-row path names it. */
const NOT_AS_CHOSEN = 'a value not written in the layout chosen for its column';

/** Thrown by Postgres steps of the direct load: the row-by-row path takes over. */
class Abandon extends Error {}

class DirectLoad {
  private readonly scan: CsvScan;
  private readonly nullBytes: Buffer;
  private table: DirectTable | undefined;
  private header = false;
  private names: string[] = [];
  private loaded: SqlType[] = [];
  /** How the values of each column were found written when the COPY (re)started. */
  private loadedWritten: (Written | undefined)[] = [];
  /** The rewriting of each column's values that the COPY gets (convert.ts). */
  private applied: (Rewriter | undefined)[] = [];
  /**
   * Whether some column is rewritten: then a record is sent once the scan has seen all of it.
   * Otherwise chunks go on as they come (holding back measured no faster, and is not needed).
   */
  private rewriting = false;
  /** On append: the types of the table columns the file's columns go to. */
  private appendTypes: string[] | undefined;
  /** Whether the scan has seen the end of the upload. */
  private ended = false;
  /** The bit each column's chosen layout (`written` of the columns field) requires of its values. */
  private readonly required: (number | undefined)[];
  /** Columns whose type the caller chose: Postgres checks their values, inference does not move them. */
  private forced: boolean[] = [];
  private demoted: boolean[] = [];
  private restarts = 0;
  private out: Forwarder | undefined;

  constructor(
    private readonly client: pg.ClientBase,
    private readonly upload: CsvUpload,
    private readonly opts: ParseOptions,
    private readonly target: Target,
    private readonly progress: Progress,
    private readonly spool: Spool,
  ) {
    this.nullBytes = Buffer.from(opts.nullValues[0]!, 'utf8');
    this.required = requiredBits(opts.columns);
    this.scan = new CsvScan(upload.delimiter.charCodeAt(0), this.nullBytes, true);
  }

  async run(received: (reading: Reading) => Promise<void>, fallback: Fallback): Promise<ImportOutcome> {
    const it = this.upload.bytes[Symbol.asyncIterator]();
    let reason: string | undefined;
    try {
      reason = await this.load(it);
      if (reason === undefined) return await this.finish(received);
    } catch (err: unknown) {
      if (!(err instanceof Abandon)) {
        await this.table?.rollback().catch(() => undefined);
        throw err;
      }
      reason = `Postgres: ${err.cause instanceof Error ? err.cause.message : String(err.cause)}`;
    }
    const table = this.table;
    this.table = undefined;
    await table?.rollback();
    this.progress.rows = 0;
    const spool = this.spool;
    const upTo = spool.size;
    const outcome = await fallback(
      (async function* () {
        yield* spool.read(0, upTo);
        for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
      })(),
    );
    return { ...outcome, load: { path: 'rows', reason } };
  }

  /** Streams the whole upload into the table; or says why the row-by-row path must take over. */
  private async load(it: AsyncIterator<Buffer>): Promise<string | undefined> {
    const scan = this.scan;
    const sample: Buffer[] = [];
    let next = await it.next();
    for (; !next.done; next = await it.next()) {
      await this.read(next.value);
      if (scan.incompatible !== undefined) return scan.incompatible;
      sample.push(next.value);
      if (this.spool.size >= SAMPLE_BYTES && scan.width >= 0) break;
    }
    if (next.done) this.end();
    if (scan.incompatible !== undefined) return scan.incompatible;
    if (scan.width < 0) throw new PgError(SqlState.BadCopyFileFormat, 'the file holds no records', { hint: 'upload a file with at least one row' });
    const refused = await this.start();
    if (refused !== undefined) return refused;
    if (this.notAsChosen()) return NOT_AS_CHOSEN;
    if (!(await this.replay(sample))) return SKIPPED_LATE;
    let base = this.spool.size;
    if (!next.done) {
      for (next = await it.next(); !next.done; next = await it.next()) {
        await this.read(next.value);
        if (scan.incompatible !== undefined) return scan.incompatible;
        if (this.notAsChosen()) return NOT_AS_CHOSEN;
        if (this.mismatched()) {
          if (!(await this.restart())) return SKIPPED_LATE;
        } else if (!(await this.out!.forward(next.value, base, this.rewriting ? scan.decidedTo : undefined))) return SKIPPED_LATE;
        base += next.value.length;
      }
      this.end();
      if (scan.incompatible !== undefined) return scan.incompatible;
    }
    return this.settle();
  }

  private end(): void {
    this.scan.end();
    this.ended = true;
  }

  /** Spools and scans one chunk. */
  private async read(chunk: Buffer): Promise<void> {
    await this.spool.append(chunk);
    this.scan.feed(chunk);
    // While sampling nothing is sent yet: replay() finds the sample's ranges again.
    const skips = this.scan.takeSkips();
    const replacements = this.scan.takeReplacements();
    this.out?.skip(skips, replacements);
    this.progress.rows = this.scan.rows;
  }

  /**
   * Guesses the header and the types from the sample (the caller's overrides applied), and starts
   * the COPY; or says why the row-by-row path must take over.
   */
  private async start(): Promise<string | undefined> {
    const scan = this.scan;
    const overrides = this.opts.columns;
    this.header = scan.isHeader(this.opts.header);
    const fileNames = columnNames(this.header ? scan.first : [], scan.width);
    // A wrong number of entries is wrong whatever the header: no need to read the file again to say so.
    assertWidth(overrides, fileNames);
    const guess = scan.types(this.header).map((t, i) => ({ name: fileNames[i]!, ...t }));
    const chosen = this.refusal(() => resolveColumns(guess, overrides));
    if (typeof chosen === 'string') return chosen;
    this.names = chosen.map((c) => c.name);
    let columns = this.names;
    if (this.target.mode === 'append') {
      const existing = (await this.pg(() => existingColumns(this.client, this.target.schema, this.target.table))) ?? [];
      const mapped = this.refusal(() => appendTargets(this.target, existing, this.names, this.header || renames(overrides), overrides));
      if (typeof mapped === 'string') return mapped;
      columns = mapped.map((m) => m.name);
      this.appendTypes = mapped.map((m) => m.type);
    }
    this.forced = chosen.map((_, i) => overrides?.[i]?.type !== undefined);
    this.loaded = chosen.map((c) => c.type);
    this.loadedWritten = chosen.map((c) => c.written);
    this.demoted = this.loaded.map(() => false);
    this.table = await this.pg(() => DirectTable.begin(this.client, this.target, columns, this.upload.delimiter, this.opts.nullValues[0]!));
    await this.pg(() => this.table!.open(this.loaded));
    return undefined;
  }

  /**
   * Runs a check of the columns as guessed from the sample; its refusal becomes the reason to go
   * row by row, whose header is decided on the whole file (and which then names the problem).
   */
  private refusal<T>(check: () => T): T | string {
    try {
      return check();
    } catch (err: unknown) {
      if (err instanceof PgError) return `the columns guessed from the first rows: ${err.message}`;
      throw err;
    }
  }

  /** Sends the stream, less blank lines and the header, to the COPY. */
  private forwarder(): Forwarder {
    return new Forwarder(this.header, (bytes) => this.pg(() => this.table!.write(bytes)));
  }

  /** Whether a column has a value that does not fit the layout the caller chose for it. */
  private notAsChosen(): boolean {
    return this.required.some((bit, i) => bit !== undefined && !this.scan.fits(i, bit, this.header));
  }

  /** How column `i`'s values are written by `now`'s inference, or as the caller chose. */
  private written(now: readonly ChosenType[], i: number): Written | undefined {
    return this.required[i] === undefined ? now[i]!.written : this.loadedWritten[i];
  }

  /** The type column `i`'s values are rewritten for (append: the table column's). */
  private rewriteType(i: number): string {
    return this.appendTypes === undefined ? this.loaded[i]! : this.restarts > MAX_RESTARTS ? 'text' : this.appendTypes[i]!;
  }

  /**
   * Whether a column's values no longer fit the type it is being loaded as (on append the
   * table's own types: Postgres checks each value), or need another rewriting.
   */
  private mismatched(): boolean {
    const now = this.scan.types(this.header);
    return this.loaded.some((t, i) => {
      if (rewriterOf(this.rewriteType(i), this.written(now, i)) !== this.applied[i]) return true;
      return this.appendTypes === undefined && !this.forced[i] && t !== 'text' && now[i]!.type !== t;
    });
  }

  /** Starts over with the types known now, sending the spooled upload again. */
  private async restart(): Promise<boolean> {
    const now = this.scan.types(this.header);
    const all = ++this.restarts > MAX_RESTARTS;
    this.loaded = this.loaded.map((t, i) => {
      if (all) return 'text';
      if (this.forced[i] || this.appendTypes !== undefined) return t;
      const current = now[i]!;
      if (t === 'text' || current.type === t) return t;
      const demote = this.demoted[i]!;
      this.demoted[i] = true;
      return demote ? 'text' : current.type;
    });
    this.loadedWritten = now.map((_, i) => this.written(now, i));
    await this.pg(() => this.table!.restart(this.loaded));
    return this.replay(this.spool.read(0, this.spool.size));
  }

  /**
   * Sends the upload read so far (`chunks`, from its start) to a new COPY, with the rewriting of
   * the columns as loaded now; from then on the scan finds the values to rewrite itself. Each
   * record goes once the replay has seen all of it (its header or blank-line ranges are known).
   */
  private async replay(chunks: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<boolean> {
    const out = (this.out = this.forwarder());
    this.applied = this.loaded.map((_, i) => rewriterOf(this.rewriteType(i), this.loadedWritten[i]));
    this.rewriting = this.applied.some((r) => r !== undefined);
    const replay = new CsvScan(this.upload.delimiter.charCodeAt(0), this.nullBytes, false);
    replay.rewrite(this.applied, !this.header);
    let base = 0;
    for await (const chunk of chunks) {
      replay.feed(chunk);
      out.skip(replay.takeSkips(), replay.takeReplacements());
      if (replay.incompatible !== undefined || !(await out.forward(chunk, base, replay.decidedTo))) return false;
      base += chunk.length;
    }
    if (this.ended) {
      replay.end();
      out.skip(replay.takeSkips(), replay.takeReplacements());
      if (!(await out.forward(Buffer.alloc(0), base))) return false;
    }
    this.scan.takeSkips();
    this.scan.takeReplacements();
    this.scan.rewrite(this.applied, false);
    return true;
  }

  /** After the end: restarts once more if the last record changed a type, else sends what is left. */
  private async settle(): Promise<string | undefined> {
    if (this.notAsChosen()) return NOT_AS_CHOSEN;
    if (this.mismatched()) {
      if (!(await this.restart())) return SKIPPED_LATE;
    } else {
      this.out!.skip(this.scan.takeSkips(), this.scan.takeReplacements());
      if (!(await this.out!.forward(Buffer.alloc(0), this.spool.size))) return SKIPPED_LATE;
    }
    // A header guessed from the sample that the whole file contradicts: its first row was not loaded.
    return this.scan.isHeader(this.opts.header) === this.header ? undefined : 'the header guessed from the first rows';
  }

  /** Ends the COPY, converts the columns loaded as text, and commits. */
  private async finish(received: (reading: Reading) => Promise<void>): Promise<ImportOutcome> {
    const table = this.table!;
    const rows = await this.pg(() => table.close());
    const inferred = this.scan.types(this.header).map((t, i) => ({ name: this.names[i]!, ...t }));
    const columns = resolveColumns(inferred, this.opts.columns);
    const converted = this.target.mode === 'append' ? 0 : await this.pg(() => table.convert(columns, this.loaded));
    this.progress.rows = rows;
    const { format, delimiter } = this.upload;
    await received({ format, delimiter, header: this.header, columns, rows, sample: [] });
    await table.commit();
    this.table = undefined;
    return { format, delimiter, header: this.header, columns, rows, load: { path: 'direct', restarts: this.restarts, converted } };
  }

  /** Runs a Postgres step; its failure abandons the direct load. */
  private async pg<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err: unknown) {
      throw new Abandon('direct load abandoned', { cause: err });
    }
  }
}

/**
 * Loads a CSV/TSV upload into `target` with Postgres' COPY (see the top of this file); hands it
 * to `fallback` when only the row-by-row path can load it as csv.ts reads it.
 */
export async function loadDirect(
  client: pg.ClientBase,
  upload: CsvUpload,
  opts: ParseOptions,
  target: Target,
  progress: Progress,
  received: (reading: Reading) => Promise<void>,
  fallback: Fallback,
): Promise<ImportOutcome> {
  const spool = await Spool.create();
  try {
    return await new DirectLoad(client, upload, opts, target, progress, spool).run(received, fallback);
  } finally {
    await spool.close();
  }
}
