/**
 * The ingest library: an upload's bytes in, a typed table out (or a preview). It runs on a
 * connection the caller gives it — logged in as the user's own role — and knows nothing of HTTP.
 */
import type pg from 'pg';
import { PgError, SqlState } from '../shared/errors.js';
import { fromDriverError } from '../upstream/pg-error.js';
import { canLoadDirect, loadDirect } from './direct.js';
import { appendRows, appendTargets, createTable, existingColumns, type Target } from './finish.js';
import { renames } from './overrides.js';
import { counted, openUpload, readRows, readUpload, type OpenedUpload, type Reading } from './read.js';
import { nullSink, Staging } from './staging.js';
import type { ColumnOverride, ImportOutcome, ParseOptions, Progress } from './types.js';

export type { Target } from './finish.js';
export * from './types.js';
export { assertTableName, tableNameFromFile, TABLE_NAME_RULE } from './names.js';
export { lineOf } from './located.js';
export { PREVIEW_ROWS } from './read.js';
export { OVERRIDE_TYPES, WRITTEN_LAYOUTS } from './overrides.js';
export { exampleOfColumn } from './written.js';
export { invalidCounts } from './sample-check.js';

/** A preview: the inferred columns, the first rows, and the number of data rows. */
export interface Preview extends ImportOutcome {
  sample: (string | null)[][];
}

export interface ImportHooks {
  /** Called once the whole file has been read and staged, before the final transaction. */
  received?(reading: Reading): Promise<void>;
}

/**
 * Checks the target before any byte is read: `create` must not find the table, `append` must,
 * and an append's renamed columns must be columns of the table, of the types chosen (if any).
 */
export async function checkTarget(client: pg.ClientBase, target: Target, overrides?: readonly ColumnOverride[]): Promise<void> {
  const existing = await existingColumns(client, target.schema, target.table);
  if (target.mode === 'create' && existing) {
    throw new PgError(SqlState.DuplicateTable, `table "${target.table}" already exists in repo "${target.schema}"`, {
      hint: 'choose another table name, or send mode=replace or mode=append',
    });
  }
  if (target.mode === 'append' && !existing) {
    throw new PgError(SqlState.UndefinedTable, `table "${target.table}" does not exist in repo "${target.schema}"`, { hint: 'mode=create makes it' });
  }
  if (target.mode === 'append' && existing && overrides) {
    // The columns not renamed are known only from the file; appendTargets checks them all again then.
    const named = overrides.filter((o) => o.name !== undefined);
    appendTargets(target, existing, named.map((o) => o.name!), true, named);
  }
}

/**
 * Imports one upload into `target` on `client` (the user's own role). CSV and TSV load directly
 * (direct.ts: Postgres parses and converts while the types are checked), everything else — and
 * the CSV files Postgres would read differently — row by row: staged, then created, replaced or
 * appended in one transaction. On failure nothing is left behind.
 */
export async function importUpload(client: pg.ClientBase, source: AsyncIterable<Buffer>, opts: ParseOptions, target: Target, progress: Progress, hooks: ImportHooks = {}): Promise<ImportOutcome> {
  try {
    // An upload may take longer than a REST statement may; the pool's reset restores the limit.
    await client.query('SET statement_timeout = 0');
  } catch (err: unknown) {
    throw fromDriverError(err) ?? err;
  }
  await checkTarget(client, target, opts.columns);
  const upload = await openUpload(counted(source, progress), opts);
  const received = async (reading: Reading) => hooks.received?.(reading);
  const { format, delimiter } = upload;
  if ((format === 'csv' || format === 'tsv') && canLoadDirect(delimiter!, opts.nullValues)) {
    const rowByRow = (bytes: AsyncIterable<Buffer>) => importRows(client, { format, delimiter, bytes }, opts, target, progress, received);
    return loadDirect(client, { format, delimiter: delimiter!, bytes: upload.bytes }, opts, target, progress, received, rowByRow);
  }
  return importRows(client, upload, opts, target, progress, received);
}

/** The row-by-row import: every row staged as text, then the table made from the staged rows. */
async function importRows(client: pg.ClientBase, upload: OpenedUpload, opts: ParseOptions, target: Target, progress: Progress, received: (reading: Reading) => Promise<void>): Promise<ImportOutcome> {
  let staging: Staging | undefined;
  try {
    const reading = await readRows(upload, opts, async (width) => (staging = await Staging.create(client, width)), progress);
    await received(reading);
    let rows: number;
    if (target.mode === 'append') {
      const existing = await existingColumns(client, target.schema, target.table);
      if (!existing) throw new PgError(SqlState.UndefinedTable, `table "${target.table}" does not exist in repo "${target.schema}"`);
      const byName = reading.header || renames(opts.columns);
      const mapped = appendTargets(target, existing, reading.columns.map((c) => c.name), byName, opts.columns);
      const written = mapped.map((m) => ({ ...m, written: reading.columns[m.index]!.written }));
      rows = await appendRows(client, target, written, reading.skipLine);
    } else {
      rows = await createTable(client, target, reading.columns, reading.skipLine);
    }
    progress.rows = rows;
    return { format: reading.format, delimiter: reading.delimiter, header: reading.header, columns: reading.columns, rows, load: { path: 'rows' } };
  } catch (err: unknown) {
    staging?.abort();
    throw err;
  } finally {
    await staging?.drop().catch(() => undefined);
  }
}

/** Reads a whole upload without touching any database: inferred columns and the first rows. */
export async function previewUpload(source: AsyncIterable<Buffer>, opts: ParseOptions, progress: Progress = { bytes: 0, rows: 0 }): Promise<Preview> {
  const reading = await readUpload(source, opts, async () => nullSink, progress, true);
  return { format: reading.format, delimiter: reading.delimiter, header: reading.header, columns: reading.columns, rows: reading.rows, sample: reading.sample };
}
