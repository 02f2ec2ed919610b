/**
 * The preview's check of chosen types: how many of the previewed values of each column would
 * not load as its type. Postgres decides (`pg_input_is_valid`, Postgres 16+), since the load
 * casts with Postgres' own input functions and those accept more than inference does (` 42` is
 * a valid BIGINT); one statement for the whole sample, whatever its width.
 */
import type pg from 'pg';
import { fromDriverError } from '../upstream/pg-error.js';
import { classify } from './classify.js';
import { LOAD_SETTINGS, readable } from './convert.js';
import { LAYOUT_BITS } from './written.js';
import type { InferredColumn } from './types.js';

const COUNT_SQL = `
SELECT s.i, count(*)::int AS invalid
  FROM unnest($1::text[], $2::int[]) AS s(v, i)
 WHERE NOT pg_catalog.pg_input_is_valid(s.v, ($3::text[])[s.i])
 GROUP BY s.i`;

/**
 * For each of `columns`, the number of non-NULL values of `sample` (rows of text, in column
 * order) that do not read as the column's type, each value rewritten as the load would give it
 * to Postgres (convert.ts), under the load's settings; or that are not written in the column's
 * layout (one chosen by the caller: the load refuses them). TEXT takes everything else.
 */
export async function invalidCounts(client: pg.ClientBase, sample: readonly (readonly (string | null)[])[], columns: readonly InferredColumn[]): Promise<number[]> {
  const values: string[] = [];
  const index: number[] = [];
  const counts = columns.map(() => 0);
  for (const row of sample) {
    columns.forEach((c, i) => {
      const v = row[i];
      if (v === null || v === undefined) return;
      if (c.written && (classify(v) & LAYOUT_BITS[c.written.layout]) === 0) counts[i]!++;
      else if (c.type !== 'text') {
        values.push(readable(v, c.type, c.written));
        index.push(i + 1); // SQL arrays are 1-based
      }
    });
  }
  if (values.length === 0) return counts;
  try {
    await client.query(`BEGIN; ${LOAD_SETTINGS}`);
    const res = await client.query<{ i: number; invalid: number }>(COUNT_SQL, [values, index, columns.map((c) => c.type)]);
    await client.query('COMMIT');
    for (const r of res.rows) counts[r.i - 1]! += r.invalid;
  } catch (err: unknown) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw fromDriverError(err) ?? err;
  }
  return counts;
}
