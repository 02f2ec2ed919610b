/**
 * Runs one statement on a user's own upstream connection and hands out its rows in batches as
 * Postgres sends them (a portal read with a row limit per Execute), so a result of any size
 * passes through in constant memory. Values stay the text Postgres printed.
 */
import type pg from 'pg';
import Cursor from 'pg-cursor';
import { PgError, SqlState } from '../shared/errors.js';
import { fromDriverError } from './pg-error.js';
import type { ColumnType, TypeCatalog } from './query-types.js';

/** One row: each value the text Postgres printed, or null. */
export type Row = (string | null)[];

/** A result column: its (unique) name and type. */
export interface Column {
  name: string;
  type: ColumnType;
}

/** Every value as the text Postgres sent: exact digits, parsed by nobody. */
const textTypes = { getTypeParser: () => (value: string) => value };

/**
 * pg-cursor speaks only the row protocol. A COPY would hand it CopyData (out) or wait for the
 * client's data (in); these handlers keep the connection in step and the request refused.
 */
class StatementCursor extends Cursor<Row> {
  copy: 'in' | 'out' | undefined;
  /** The whole command tag (`CREATE TABLE`, `INSERT 0 3`): pg keeps only its first word. */
  tag: string | undefined;

  handleCommandComplete(msg: { text: string }): void {
    this.tag = msg.text;
    (Cursor.prototype as unknown as { handleCommandComplete(this: Cursor, msg: unknown): void }).handleCommandComplete.call(this, msg);
  }

  handleCopyInResponse(connection: unknown): void {
    this.copy = 'in';
    (connection as { sendCopyFail(message: string): void }).sendCopyFail('COPY FROM STDIN is not available over REST');
  }

  handleCopyData(): void {
    this.copy = 'out';
  }
}

function copyRefused(): PgError {
  return new PgError(SqlState.FeatureNotSupported, 'COPY … TO STDOUT / FROM STDIN is not available over the REST API', {
    hint: 'use SELECT over REST, or COPY over the Postgres wire protocol (psql \\copy)',
  });
}

interface Batch {
  rows: Row[];
  result: pg.QueryResult;
}

/** A statement whose rows are read batch by batch. */
export class RunningStatement {
  private finished = false;
  private rowsRead: number;
  private command: string | null = null;
  private rowCount: number | null = null;

  private constructor(
    private readonly cursor: StatementCursor,
    /** Result columns; empty for a statement that returns no rows (INSERT, CREATE TABLE…). */
    readonly columns: readonly Column[],
    /** The rows that came with the column description. */
    readonly firstRows: readonly Row[],
  ) {
    this.rowsRead = firstRows.length;
  }

  /**
   * Starts `sql` on `client` and waits for its first batch of at most `maxRows` rows, so that
   * an error raised before any row (syntax, permission, a failing cast on row 1) is thrown here,
   * while the answer's status can still say so.
   */
  static async start(client: pg.PoolClient, sql: string, types: TypeCatalog, maxRows: number): Promise<RunningStatement> {
    const cursor = client.query(new StatementCursor(sql, undefined, { rowMode: 'array', types: textTypes }));
    const first = await readBatch(cursor, maxRows);
    // COPY TO STDOUT of an empty table sends no CopyData: its tag tells.
    if (cursor.copy || cursor.tag?.startsWith('COPY ')) throw copyRefused();
    const fields = first.result.fields ?? [];
    const described = await types.describe(fields.map((f) => ({ oid: f.dataTypeID, typmod: f.dataTypeModifier })));
    const names = uniqueNames(fields.map((f) => f.name));
    const columns = described.map((type, i) => ({ name: names[i] ?? '', type }));
    const statement = new RunningStatement(cursor, columns, first.rows);
    statement.note();
    return statement;
  }

  /** True once Postgres completed the statement (every row was read). */
  get done(): boolean {
    return this.finished;
  }

  /** Command tag verb (`SELECT`, `INSERT`, `CREATE TABLE`) and its count (null when the tag has none); set when done. */
  get outcome(): { command: string | null; rowCount: number | null } {
    return { command: this.command, rowCount: this.rowCount };
  }

  /** The next batch of at most `maxRows` rows; empty when done. */
  async next(maxRows: number): Promise<Row[]> {
    if (this.finished) return [];
    let batch: Batch;
    try {
      batch = await readBatch(this.cursor, maxRows);
    } catch (err: unknown) {
      this.finished = true; // an error ends the statement: nothing left to close
      throw err;
    }
    this.rowsRead += batch.rows.length;
    this.note();
    return batch.rows;
  }

  /** Ends the statement early (row cap reached, client gone): closes the portal. */
  async close(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    await this.cursor.close().catch(() => undefined);
  }

  private note(): void {
    // The tag arrives with CommandComplete: before it the portal was only suspended.
    if (this.cursor.tag !== undefined) {
      this.finished = true;
      ({ command: this.command, rowCount: this.rowCount } = parseCommandTag(this.cursor.tag));
      // A portal read in batches is tagged with the rows of its last Execute only (SELECT,
      // INSERT … RETURNING), and SHOW or EXPLAIN return rows under a tag without a count: a
      // statement that returns rows counts the rows it returned.
      if (this.command === 'SELECT' || this.columns.length > 0) this.rowCount = this.rowsRead;
    }
  }
}

/** `INSERT 0 3` → INSERT, 3; `SELECT 5` → SELECT, 5; `CREATE TABLE` → CREATE TABLE, null. */
export function parseCommandTag(tag: string): { command: string; rowCount: number | null } {
  const m = /^(.*?)((?: \d+)*)$/.exec(tag);
  const counts = (m?.[2] ?? '').trim();
  const last = counts ? counts.split(' ').at(-1) : undefined;
  return { command: m?.[1] ?? tag, rowCount: last !== undefined ? Number(last) : null };
}

function readBatch(cursor: StatementCursor, maxRows: number): Promise<Batch> {
  return new Promise((resolve, reject) => {
    cursor.read(maxRows, (err, rows, result) => {
      if (err) reject(cursor.copy === 'in' ? copyRefused() : (fromDriverError(err) ?? err));
      else resolve({ rows, result });
    });
  });
}

/**
 * Column names made unique so that `fields` (an object) keeps one entry per column and rows stay
 * aligned with it: the second `?column?` becomes `?column?_2`, the third `?column?_3`, skipping
 * names that already exist.
 */
export function uniqueNames(names: readonly string[]): string[] {
  const taken = new Set(names);
  const seen = new Set<string>();
  return names.map((name) => {
    if (!seen.has(name)) {
      seen.add(name);
      return name;
    }
    let n = 2;
    while (taken.has(`${name}_${n}`) || seen.has(`${name}_${n}`)) n++;
    const unique = `${name}_${n}`;
    seen.add(unique);
    return unique;
  });
}
