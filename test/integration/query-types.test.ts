/**
 * The REST answer's column types: looked up once per built-in type and then known without a
 * round trip; user types (which can be dropped and their oid reused) are looked up every time.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TypeCatalog } from '../../src/upstream/query-types.js';
import { createTestDatabase } from '../helpers/cluster.js';

let admin: pg.Pool;

beforeAll(async () => {
  admin = new pg.Pool({ connectionString: await createTestDatabase(), max: 2 });
});

afterAll(async () => {
  await admin?.end();
});

/** Counts the admin pool's queries, to tell a lookup from a cache hit. */
function counting(pool: pg.Pool): { pool: Pick<pg.Pool, 'query'>; queries: () => number } {
  let n = 0;
  const query = ((...args: Parameters<pg.Pool['query']>) => {
    n++;
    return (pool.query as (...a: unknown[]) => unknown)(...args);
  }) as pg.Pool['query'];
  return { pool: { query }, queries: () => n };
}

describe('TypeCatalog', () => {
  it('knows built-in types after their first lookup, per typmod', async () => {
    const { pool, queries } = counting(admin);
    const types = new TypeCatalog(pool);
    const columns = [
      { oid: 23, typmod: -1 }, // int4
      { oid: 1700, typmod: (10 << 16) + 2 + 4 }, // numeric(10,2)
      { oid: 1009, typmod: -1 }, // text[]
    ];
    expect(types.known(columns)).toBeUndefined();
    const described = await types.describe(columns);
    expect(described.map((t) => t.name)).toEqual(['INTEGER', 'NUMERIC(10,2)', 'TEXT[]']);
    expect(described[2]?.encoding).toEqual({ kind: 'array', delimiter: ',', element: { kind: 'text' } });
    const lookups = queries();
    expect(types.known(columns)).toEqual(described);
    expect(queries()).toBe(lookups);
    // Another typmod of a known type is another name: looked up.
    expect(types.known([{ oid: 1700, typmod: (12 << 16) + 4 + 4 }])).toBeUndefined();
  });

  it('never keeps a user type', async () => {
    await admin.query(`CREATE TYPE mood AS ENUM ('ok', 'sad')`);
    const { rows } = await admin.query<{ oid: number }>(`SELECT 'mood'::regtype::oid::int AS oid`);
    const types = new TypeCatalog(admin);
    const columns = [{ oid: rows[0]!.oid, typmod: -1 }, { oid: 25, typmod: -1 }];
    expect((await types.describe(columns)).map((t) => t.name)).toEqual(['MOOD', 'TEXT']);
    expect(types.known(columns)).toBeUndefined();
    expect(types.known([{ oid: 25, typmod: -1 }])?.map((t) => t.name)).toEqual(['TEXT']);
  });
});
