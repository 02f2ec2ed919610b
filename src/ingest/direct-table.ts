/**
 * The Postgres side of the direct load (direct.ts): one transaction on the user's connection that
 * creates the table with the guessed column types (under a reserved name, renamed — on replace:
 * swapped in — at the end; append: the existing table) and streams the upload's own CSV bytes
 * into it with `COPY … FROM STDIN (FORMAT csv)`, so Postgres parses and converts every value
 * while Node only checks and infers (and rewrites the few values Postgres would misread, see
 * convert.ts), under settings of its own (LOAD_SETTINGS). A savepoint before the table lets a wrong guess start over;
 * any failure rolls back: no new table, an existing one untouched.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { escapeIdentifier, escapeLiteral } from 'pg';
import { from as copyFrom, type CopyStreamQuery } from 'pg-copy-streams';
import { PgError, SqlState } from '../shared/errors.js';
import { fromDriverError } from '../upstream/pg-error.js';
import { castSql, LOAD_SETTINGS } from './convert.js';
import { endCopy, firstOf } from './events.js';
import { lendFor, type Target } from './finish.js';
import { RESERVED_PREFIX } from './names.js';
import type { InferredColumn, SqlType } from './types.js';

const qualified = (schema: string, table: string) => `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`;

async function run(client: pg.ClientBase, sql: string): Promise<pg.QueryResult> {
  try {
    return await client.query(sql);
  } catch (err: unknown) {
    throw fromDriverError(err) ?? err;
  }
}

/** The table a direct load writes, and the transaction around it. */
export class DirectTable {
  private copy: CopyStreamQuery | undefined;
  private failure: unknown;
  private readonly table: string;
  /** The name the table is built under. */
  private readonly build: string;

  private constructor(
    private readonly client: pg.ClientBase,
    private readonly target: Target,
    private readonly names: readonly string[],
    private readonly options: string,
  ) {
    // A new table is built under a name of its own and renamed at the end, so that its name is
    // only taken at commit (a concurrent upload of the same name fails then, not waits all along).
    this.build = target.mode === 'append' ? target.table : `${RESERVED_PREFIX}new_${randomBytes(8).toString('hex')}`;
    this.table = qualified(target.schema, this.build);
  }

  /**
   * Opens the transaction for a CSV with `delimiter` whose unquoted `nullText` is NULL, loading
   * columns `names` (append: the existing table's columns they go to).
   */
  static async begin(client: pg.ClientBase, target: Target, names: readonly string[], delimiter: string, nullText: string): Promise<DirectTable> {
    const options = `FORMAT csv, DELIMITER ${escapeLiteral(delimiter)}, NULL ${escapeLiteral(nullText)}, QUOTE '"'`;
    await run(client, 'BEGIN');
    try {
      await run(client, `${LOAD_SETTINGS}; SAVEPOINT direct_load`);
    } catch (err: unknown) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
    return new DirectTable(client, target, names, options);
  }

  /** Creates the table with `types` (not on append) and starts the COPY into it. */
  async open(types: readonly SqlType[]): Promise<void> {
    if (this.target.mode !== 'append') {
      const defs = this.names.map((n, i) => `${escapeIdentifier(n)} ${types[i]!}`).join(', ');
      await run(this.client, `CREATE TABLE ${this.table} (${defs})`);
    }
    const cols = this.names.map((n) => escapeIdentifier(n)).join(', ');
    const copy = this.client.query(copyFrom(`COPY ${this.table} (${cols}) FROM STDIN (${this.options})`));
    copy.on('error', (err: unknown) => {
      this.failure ??= fromDriverError(err) ?? err;
    });
    this.failure = undefined;
    this.copy = copy;
  }

  /** Sends CSV bytes; resolves once the connection can take more. */
  async write(bytes: Buffer): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const copy = this.copy!;
    if (copy.write(bytes)) return;
    await firstOf(copy, ['drain', 'error']);
    if (this.failure !== undefined) throw this.failure;
  }

  /** Ends the COPY; returns the rows it wrote. */
  async close(): Promise<number> {
    const copy = this.copy!;
    this.copy = undefined;
    await endCopy(copy, () => this.failure);
    return copy.rowCount;
  }

  /** Abandons the COPY and the table, back to the savepoint, to open again with other types. */
  async restart(types: readonly SqlType[]): Promise<void> {
    await this.abortCopy();
    await run(this.client, 'ROLLBACK TO SAVEPOINT direct_load');
    await this.open(types);
  }

  /** Turns the columns loaded as text whose values all fit another type into that type; returns how many. */
  async convert(columns: readonly InferredColumn[], loaded: readonly SqlType[]): Promise<number> {
    const changes = columns.flatMap((c, i) => {
      if (loaded[i] !== 'text' || c.type === 'text') return [];
      const name = escapeIdentifier(this.names[i]!);
      return [`ALTER COLUMN ${name} TYPE ${c.type} USING ${castSql(name, c.type, c.written)}`];
    });
    if (changes.length) await run(this.client, `${lendFor(this.target, [this.build])}ALTER TABLE ${this.table} ${changes.join(', ')}`);
    return changes.length;
  }

  /** Gives a new table its name (replace: in place of the old one), and commits. */
  async commit(): Promise<void> {
    if (this.target.mode === 'replace') await run(this.client, `${lendFor(this.target, [this.target.table])}DROP TABLE IF EXISTS ${qualified(this.target.schema, this.target.table)}`);
    if (this.target.mode !== 'append') await run(this.client, `${lendFor(this.target, [this.build])}ALTER TABLE ${this.table} RENAME TO ${escapeIdentifier(this.target.table)}`);
    await run(this.client, 'COMMIT');
  }

  /** Undoes everything (the connection stays usable when it is healthy). */
  async rollback(): Promise<void> {
    await this.abortCopy();
    await run(this.client, 'ROLLBACK');
  }

  private async abortCopy(): Promise<void> {
    const copy = this.copy;
    this.copy = undefined;
    // A COPY that already failed has ended on the server: there is nothing to cancel.
    if (!copy || copy.destroyed || this.failure !== undefined) return;
    // pg-copy-streams answers destroy() with CopyFail; the connection is usable once the error is back.
    const ended = firstOf(copy, ['close', 'error']);
    copy.destroy(new PgError(SqlState.QueryCanceled, 'direct load abandoned'));
    await ended;
  }
}
