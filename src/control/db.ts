import type pg from 'pg';
import { fromDriverError } from '../upstream/pg-error.js';

export type Queryable = Pick<pg.PoolClient, 'query'>;

/** Runs `fn` in one transaction on a pooled admin connection; driver errors become PgErrors. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect().catch((err: unknown) => {
    throw fromDriverError(err) ?? err;
  });
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err: unknown) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw fromDriverError(err) ?? err;
  } finally {
    client.release();
  }
}

/** One statement on the admin pool, errors as PgErrors. */
export async function query<R extends pg.QueryResultRow>(pool: Queryable, text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
  try {
    return await pool.query<R>(text, values);
  } catch (err: unknown) {
    throw fromDriverError(err) ?? err;
  }
}
