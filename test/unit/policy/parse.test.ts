// Parsing: syntax errors with Postgres' message and position, size limits, empty strings,
// statement counts, denial positions, and what a denial reveals.
import { afterAll, describe, expect, test } from 'vitest';
import { createPolicy } from '../../../src/policy/index.js';
import { deny, table } from './expect.js';
import { alice, decide, inSales } from './fixture.js';

describe('syntax errors carry the parser message and a 1-based character position', () => {
  const cases: Array<[string, string, number]> = [
    ['SELEC 1', 'syntax error at or near "SELEC"', 1],
    ['SELECT 1 FROM', 'syntax error at end of input', 14],
    ["SELECT 'ääää' FROM WHERE", 'syntax error at or near "WHERE"', 20],
    ['SELECT 1; SELEC 2', 'syntax error at or near "SELEC"', 11],
    ["SELECT 'abc", 'unterminated quoted string at or near "\'abc"', 8],
    ['SELECT "abc', 'unterminated quoted identifier at or near ""abc"', 8],
    ['SELECT $$abc', 'unterminated dollar-quoted string at or near "$$abc"', 8],
    ['SELECT 1 /* open', 'unterminated /* comment at or near "/* open"', 10],
    ['CREATE TABLE t (a int', 'syntax error at end of input', 22],
  ];
  test.each(cases)('%s', async (sql, message, position) => {
    const d = await decide(sql);
    expect(d.kind).toBe('deny');
    if (d.kind !== 'deny') return;
    expect(d.error.code).toBe('42601');
    expect(d.error.message).toBe(message);
    expect(d.error.position).toBe(position);
  });

  test('one bad statement refuses the whole string, even after good ones', async () => {
    expect(await decide('SELECT 1; SELECT 2; SELEC 3')).toMatchObject({ kind: 'deny', error: { code: '42601' } });
  });
});

describe('what is not SQL text', () => {
  table([
    ['SELECT 1\0; DROP TABLE t', deny('22021')],
    ['SELECT \'\ud800\'', deny('22021')],
    ['SELECT ' + '('.repeat(30000) + '1' + ')'.repeat(30000), deny('42601')],
    ['SELECT * FROM ' + '(SELECT * FROM '.repeat(1500) + 't' + ') s'.repeat(1500), deny('54001')],
  ]);
});

describe('statement counts', () => {
  const cases: Array<[string, number]> = [
    ['', 0],
    ['   \n\t', 0],
    ['-- only a comment', 0],
    ['/* c */ ;;', 0],
    ['SELECT 1', 1],
    ['SELECT 1;', 1],
    ['SELECT 1; SELECT 2', 2],
    ['BEGIN; INSERT INTO "alice/sales".t VALUES (1); COMMIT;', 3],
  ];
  test.each(cases)('%j has %i', async (sql, count) => {
    const d = await decide(sql);
    expect(d.kind).toBe('allow');
    expect(d.kind === 'allow' && d.statements).toBe(count);
  });
});

describe('size limit', () => {
  const small = createPolicy({ maxStatementBytes: 100 });
  afterAll(async () => (await small).close());

  test('a string over the limit is refused before parsing, counted in UTF-8 bytes', async () => {
    const p = await small;
    const at = 'SELECT ' + "'" + 'x'.repeat(90) + "'";
    expect(Buffer.byteLength(at)).toBe(99);
    expect(p.decide(at, alice, inSales)).toMatchObject({ kind: 'allow' });
    expect(p.decide(`${at} `, alice, inSales)).toMatchObject({ kind: 'allow' });
    const over = p.decide(`${at}  `, alice, inSales);
    expect(over).toMatchObject({ kind: 'deny', error: { code: '54000' } });
    // 51 two-byte characters: 51 JavaScript characters, 102 bytes.
    const wide = p.decide('ä'.repeat(51), alice, inSales);
    expect(wide).toMatchObject({ kind: 'deny', error: { code: '54000' } });
    // Not a syntax error: the limit comes first, so this never reaches the parser.
    expect(p.decide('x'.repeat(101), alice, inSales)).toMatchObject({ kind: 'deny', error: { code: '54000' } });
  });
});

describe('denials', () => {
  test('name the position of the reference, in characters', async () => {
    expect(await decide('SELECT 1 FROM "bob/secret".t')).toMatchObject({ kind: 'deny', error: { position: 15 } });
    expect(await decide("SELECT 'äöü', x FROM \"bob/secret\".t")).toMatchObject({ kind: 'deny', error: { position: 22 } });
    expect(await decide('SELECT 1; SELECT * FROM "bob/secret".t')).toMatchObject({ kind: 'deny', error: { position: 25 } });
  });

  test('a private repo and a missing one are refused alike', async () => {
    const secret = await decide('SELECT * FROM "bob/secret".t');
    const missing = await decide('SELECT * FROM "bob/none".t');
    const text = (d: Awaited<ReturnType<typeof decide>>): string =>
      d.kind === 'deny' ? JSON.stringify({ ...d.error.toJSON(), message: d.error.message }).replaceAll(/bob\/(secret|none)/g, 'X') : d.kind;
    expect(text(secret)).toBe(text(missing));
    expect(secret).toMatchObject({
      kind: 'deny',
      error: { code: '42501', message: 'permission denied for repo "bob/secret"', hint: 'ask bob to add you as a collaborator, or use a repo of your own' },
    });
  });

  test('a read-only repo says so and how to get more', async () => {
    expect(await decide('INSERT INTO "dave/readonly".t VALUES (1)')).toMatchObject({
      kind: 'deny',
      error: { code: '42501', message: 'repo "dave/readonly" is read-only for you', hint: 'ask dave for write access' },
    });
  });

  test('a schema that is not a repo explains where tables live', async () => {
    const d = await decide('CREATE TABLE public.t (a int)');
    expect(d).toMatchObject({ kind: 'deny', error: { code: '42501' } });
    expect(d.kind === 'deny' && d.error.message).toBe('schema "public" is not a repo: tables live in repos named "alice/<repo>"');
    expect(d.kind === 'deny' && d.error.hint).toContain('CREATE SCHEMA "alice/myrepo"');
  });

  test('an unqualified name says which search_path entry refused it', async () => {
    const d = await decide('INSERT INTO t VALUES (1)', { searchPath: ['alice/sales', 'dave/readonly'] });
    expect(d.kind === 'deny' && d.error.detail).toBe('"t" is not schema-qualified, and schema "dave/readonly" is on your search_path');
  });

  test('TRUNCATE by a writer points to DELETE', async () => {
    const d = await decide('TRUNCATE "carol/shared".t');
    expect(d.kind === 'deny' && d.error.hint).toContain('DELETE FROM');
  });
});

test('the same cached analysis serves different users', async () => {
  const bob = { user: 'bob', repos: new Map([['bob/secret', 'own' as const]]) };
  const sql = 'SELECT * FROM "bob/secret".t';
  expect(await decide(sql)).toMatchObject({ kind: 'deny' });
  expect(await decide(sql, { searchPath: ['bob/secret'] }, bob)).toMatchObject({ kind: 'allow' });
  expect(await decide(sql)).toMatchObject({ kind: 'deny' });
});
