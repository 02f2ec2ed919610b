/**
 * The staging table of one upload: a TEMP table of text columns (`line`, `c1`…`cN`) on the
 * connection that later runs the final transaction. Being temporary, it is invisible to
 * everybody else and disappears with the connection, so a crash leaves nothing behind; rows
 * reach it through `COPY … FROM STDIN` in text format, with backpressure.
 */
import type pg from 'pg';
import { from as copyFrom, type CopyStreamQuery } from 'pg-copy-streams';
import { PgError, SqlState } from '../shared/errors.js';
import { fromDriverError } from '../upstream/pg-error.js';
import { endCopy, firstOf } from './events.js';
import { RESERVED_PREFIX } from './names.js';

/** Schema-qualified name of the staging table (pg_temp: the session's own temporary schema). */
export const STAGING = `pg_temp.${RESERVED_PREFIX}staging`;

/** Postgres' limit of columns per table, less the `line` column. */
export const MAX_COLUMNS = 1599;

const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const SPECIAL = /[\\\t\n\r]/;
const SPECIALS = /[\\\t\n\r]/g;

/** One row in COPY text format: the line number, then `width` cells (missing ones NULL). */
export function copyLine(line: number, values: readonly (string | null)[], width: number): string {
  let out = String(line);
  for (let i = 0; i < width; i++) {
    const v = values[i];
    if (v === null || v === undefined) out += '\t\\N';
    else out += '\t' + (SPECIAL.test(v) ? v.replace(SPECIALS, (c) => ESCAPES[c]!) : v);
  }
  return out + '\n';
}

/** Staging column of position `i` (0-based). */
export const stagingColumn = (i: number): string => `c${i + 1}`;

async function run(client: pg.ClientBase, sql: string): Promise<pg.QueryResult> {
  try {
    return await client.query(sql);
  } catch (err: unknown) {
    throw fromDriverError(err) ?? err;
  }
}

export function tooManyColumns(width: number): PgError {
  return new PgError('54011', `the file has ${width} columns; a table holds at most ${MAX_COLUMNS}`);
}

/** Where parsed rows go: the staging table, or nowhere (preview). */
export interface RowSink {
  /** Appends COPY text; resolves once the connection can take more. */
  write(text: string): Promise<void>;
  /** Adds columns up to `width` (JSON keys or XLSX cells first seen late). */
  widen(width: number): Promise<void>;
  /** Completes the COPY. */
  close(): Promise<void>;
  /** Stops a COPY in progress (CopyFail): used when the upload fails. */
  abort(): void;
}

export const nullSink: RowSink = {
  write: async () => undefined,
  widen: async () => undefined,
  close: async () => undefined,
  abort: () => undefined,
};

export class Staging implements RowSink {
  private copy: CopyStreamQuery | undefined;
  private failure: unknown;

  private constructor(
    private readonly client: pg.ClientBase,
    private width: number,
  ) {}

  /** Creates the (empty) staging table with `width` text columns. */
  static async create(client: pg.ClientBase, width: number): Promise<Staging> {
    if (width > MAX_COLUMNS) throw tooManyColumns(width);
    const cols = Array.from({ length: width }, (_, i) => `, ${stagingColumn(i)} text`).join('');
    await run(client, `DROP TABLE IF EXISTS ${STAGING}`);
    await run(client, `CREATE TEMP TABLE ${RESERVED_PREFIX}staging (line bigint${cols})`);
    return new Staging(client, width);
  }

  private open(): CopyStreamQuery {
    const copy = this.client.query(copyFrom(`COPY ${STAGING} FROM STDIN`));
    copy.on('error', (err: unknown) => {
      this.failure ??= fromDriverError(err) ?? err;
    });
    this.copy = copy;
    return copy;
  }

  async write(text: string): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const copy = this.copy ?? this.open();
    if (copy.write(text)) return;
    await firstOf(copy, ['drain', 'error']);
    if (this.failure !== undefined) throw this.failure;
  }

  async close(): Promise<void> {
    const copy = this.copy;
    if (!copy) return;
    this.copy = undefined;
    await endCopy(copy, () => this.failure);
  }

  async widen(width: number): Promise<void> {
    if (width <= this.width) return;
    if (width > MAX_COLUMNS) throw tooManyColumns(width);
    await this.close();
    const add = Array.from({ length: width - this.width }, (_, k) => `ADD COLUMN ${stagingColumn(this.width + k)} text`).join(', ');
    await run(this.client, `ALTER TABLE ${STAGING} ${add}`);
    this.width = width;
  }

  abort(): void {
    const copy = this.copy;
    this.copy = undefined;
    // pg-copy-streams answers destroy() with CopyFail, which ends the COPY with an error.
    if (copy && !copy.destroyed) copy.destroy(new PgError(SqlState.QueryCanceled, 'upload failed'));
  }

  /** Drops the table (also done by the connection's reset, or its end). */
  async drop(): Promise<void> {
    await run(this.client, `DROP TABLE IF EXISTS ${STAGING}`);
  }
}
