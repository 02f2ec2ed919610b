// Seed rule: a column type change without USING converts by itself (USING "c"::t spliced in).
import { describe, expect, test } from 'vitest';
import { parseSql } from '../../../src/policy/parse.js';
import { allow, denied, rewrite, table } from './expect.js';
import { decide } from './fixture.js';

const orders = '"alice/sales"."Orders 2024"';

describe('seed flows', () => {
  table([
    [`ALTER TABLE ${orders} ADD COLUMN "big" boolean`, allow],
    [`UPDATE ${orders} SET "big" = "n" > 5`, allow],
    [`ALTER TABLE ${orders} RENAME COLUMN "big" TO "large"`, allow],
    [`ALTER TABLE ${orders} ALTER COLUMN "c" SET DATA TYPE BIGINT`, rewrite(`ALTER TABLE ${orders} ALTER COLUMN "c" SET DATA TYPE BIGINT USING "c"::bigint`)],
    [`ALTER TABLE ${orders} ALTER COLUMN "c" SET DATA TYPE BIGINT USING 0`, allow],
    [`ALTER TABLE ${orders} DROP COLUMN "c"`, allow],
  ]);
});

describe('where USING goes', () => {
  table([
    ['ALTER TABLE t ALTER COLUMN c TYPE int', rewrite('ALTER TABLE t ALTER COLUMN c TYPE int USING "c"::int')],
    ['alter table t alter c type bigint;', rewrite('alter table t alter c type bigint USING "c"::bigint;')],
    ['ALTER TABLE t ALTER a TYPE int, ALTER b TYPE text', rewrite('ALTER TABLE t ALTER a TYPE int USING "a"::int, ALTER b TYPE text USING "b"::text')],
    ['ALTER TABLE t ALTER a TYPE int, ADD COLUMN d int', rewrite('ALTER TABLE t ALTER a TYPE int USING "a"::int, ADD COLUMN d int')],
    ['ALTER TABLE t ALTER a TYPE int USING a::int, ALTER b TYPE int', rewrite('ALTER TABLE t ALTER a TYPE int USING a::int, ALTER b TYPE int USING "b"::int')],
    ['ALTER TABLE t ALTER c TYPE numeric(10, 2)', rewrite('ALTER TABLE t ALTER c TYPE numeric(10, 2) USING "c"::numeric(10, 2)')],
    ['ALTER TABLE t ALTER c TYPE varchar(20) COLLATE "C"', rewrite('ALTER TABLE t ALTER c TYPE varchar(20) COLLATE "C" USING "c"::varchar(20)')],
    ['ALTER TABLE t ALTER c TYPE text[]', rewrite('ALTER TABLE t ALTER c TYPE text[] USING "c"::text[]')],
    ['ALTER TABLE t ALTER c TYPE TIMESTAMP WITH TIME ZONE', rewrite('ALTER TABLE t ALTER c TYPE TIMESTAMP WITH TIME ZONE USING "c"::timestamp with time zone')],
    ['ALTER TABLE t ALTER c TYPE "alice/sales".Mood', rewrite('ALTER TABLE t ALTER c TYPE "alice/sales".Mood USING "c"::"alice/sales".Mood')],
    ['ALTER TABLE t ALTER c TYPE int -- to int\n', rewrite('ALTER TABLE t ALTER c TYPE int USING "c"::int -- to int\n')],
    ['ALTER TABLE t ALTER c /* , */ TYPE int /* ; */', rewrite('ALTER TABLE t ALTER c /* , */ TYPE int USING "c"::int /* ; */')],
    ['ALTER TABLE t ALTER "we""ird col" TYPE int', rewrite('ALTER TABLE t ALTER "we""ird col" TYPE int USING "we""ird col"::int')],
    ['ALTER TABLE "Ä" ALTER "ö" TYPE int; SELECT \'é\'', rewrite('ALTER TABLE "Ä" ALTER "ö" TYPE int USING "ö"::int; SELECT \'é\'')],
    ['ALTER TABLE ONLY t ALTER c TYPE int; ALTER TABLE u ALTER d TYPE int', rewrite('ALTER TABLE ONLY t ALTER c TYPE int USING "c"::int; ALTER TABLE u ALTER d TYPE int USING "d"::int')],
    ['SELECT 1; ALTER TABLE IF EXISTS t ALTER c TYPE int', rewrite('SELECT 1; ALTER TABLE IF EXISTS t ALTER c TYPE int USING "c"::int')],
    ['ALTER TABLE t ALTER c TYPE int USING c::int', allow],
    ["ALTER TABLE t ALTER c TYPE int USING NULLIF(c, '')::int", allow],
    ['ALTER TYPE "alice/sales".pair ALTER ATTRIBUTE a TYPE bigint', allow],
    ['ALTER TABLE "carol/shared".t ALTER c TYPE bigint', denied('carol/shared')],
    ['CREATE FUNCTION "alice/sales".f() RETURNS void LANGUAGE sql AS $$ ALTER TABLE t ALTER c TYPE int $$', allow],
  ]);

  test('the rewritten string parses to the same statements plus the casts', async () => {
    const sql = 'ALTER TABLE t ALTER a TYPE int, ALTER b TYPE numeric(4,1); SELECT 1';
    const d = await decide(sql);
    expect(d.kind).toBe('rewrite');
    const parsed = d.kind === 'rewrite' ? parseSql(d.sql) : undefined;
    expect(parsed?.ok && parsed.statements.length).toBe(2);
    expect(d.kind === 'rewrite' && d.statements).toBe(2);
  });
});
