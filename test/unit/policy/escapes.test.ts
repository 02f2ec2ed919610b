// With standard_conforming_strings off, statements are judged as Postgres reads them: a backslash
// in '…' escapes the next character.
import { describe, expect, test } from 'vitest';
import { withEscapeStrings } from '../../../src/policy/escapes.js';
import { decide, inSales, summary } from './fixture.js';

const off = { ...inSales, standardConformingStrings: false };

describe('withEscapeStrings', () => {
  test('writes plain strings as the escape strings they are', () => {
    expect(withEscapeStrings(`SELECT 'a\\'b', E'c\\'d', $$e\\'$$, "f\\", 'g' -- 'h\\'\n`)?.sql).toBe(`SELECT E'a\\'b', E'c\\'d', $$e\\'$$, "f\\", E'g' -- 'h\\'\n`);
    expect(withEscapeStrings(`SELECT 'no backslash'`)).toBeUndefined();
  });
});

describe('a statement read with standard_conforming_strings off', () => {
  // On: a string, then bob's table. Off: the quote is escaped and his table is inside the string.
  const sql = `SELECT 'x\\', 1 FROM "bob/secret".t -- ' FROM "alice/sales".t`;

  test('is judged as Postgres reads it', async () => {
    expect(summary(await decide(sql, inSales))).toContain('bob/secret');
    const d = await decide(sql, off);
    expect(d.kind).toBe('allow');
  });

  test('a reference hidden by an escaped quote is found', async () => {
    // Off: 'x\' ends at the next quote, so "bob/secret".t is read as a table.
    const hidden = `SELECT 'x\\'', "bob/secret".t FROM "bob/secret".t -- '`;
    const d = await decide(hidden, off);
    expect(summary(d)).toContain('bob/secret');
  });

  test('positions count in the text as sent', async () => {
    const bad = `SELECT 'a\\'b', 'c', ) FROM x`;
    const d = await decide(bad, off);
    expect(d.kind === 'deny' && d.error.position).toBe(bad.indexOf(')') + 1);
  });
});
