import { describe, expect, it } from 'vitest';
import { literalShape } from '../../../src/policy/shape.js';

describe('literalShape', () => {
  it.each([
    ['SELECT abalance FROM pgbench_accounts WHERE aid = 123456;', 'SELECT abalance FROM pgbench_accounts WHERE aid = 0;'],
    ['UPDATE t SET a = a + -42 WHERE id = 7', 'UPDATE t SET a = a + -0 WHERE id = 0'],
    ['SELECT 1.5, .5, 1e10, 2.5E-3, 0x1F, 1_000, 0o17, 0b101', 'SELECT 0, 0, 0, 0, 0, 0, 0, 0'],
    ['SELECT a[1], b::numeric(10,2) FROM t LIMIT 5 OFFSET 10', 'SELECT a[0], b::numeric(0,0) FROM t LIMIT 0 OFFSET 0'],
    ["SELECT '123', E'it\\'s 4', $$ 5 $$, $tag$ 6 $tag$, \"col 7\", t1.c2 FROM t3 WHERE x = 8", "SELECT '123', E'it\\'s 4', $$ 5 $$, $tag$ 6 $tag$, \"col 7\", t1.c2 FROM t3 WHERE x = 0"],
    ['SELECT $1, $22 -- 3\n, 4 /* 5 /* 6 */ 7 */', 'SELECT $1, $22 -- 3\n, 0 /* 5 /* 6 */ 7 */'],
  ])('%s', (sql, shape) => {
    expect(literalShape(sql)).toBe(shape);
  });

  it('is undefined without numbers, and for number-like junk', () => {
    expect(literalShape('SELECT * FROM "bob/x".t')).toBeUndefined();
    expect(literalShape("SELECT 'a1', \"b2\", c3")).toBeUndefined();
    expect(literalShape('SELECT 1FROM t')).toBeUndefined();
    expect(literalShape("SELECT 1abc")).toBeUndefined();
  });

  it('never touches digits inside strings that may name objects', () => {
    expect(literalShape("SELECT nextval('\"bob/x\".seq1'), 2")).toBe("SELECT nextval('\"bob/x\".seq1'), 0");
    expect(literalShape("SELECT 'a''1' || 2")).toBe("SELECT 'a''1' || 0");
  });
});

describe('decisions shared by statements of one shape', () => {
  it('statements differing only in numbers share an allow; denials and rewrites stay exact', async () => {
    const { createPolicy } = await import('../../../src/policy/index.js');
    const { alice, inSales } = await import('./fixture.js');
    const policy = await createPolicy({ maxStatementBytes: 1 << 20 });
    const first = policy.decide('SELECT * FROM "alice/sales".t WHERE id = 1', alice, inSales);
    const second = policy.decide('SELECT * FROM "alice/sales".t WHERE id = 123456789', alice, inSales);
    expect(first).toMatchObject({ kind: 'allow' });
    expect(second).toMatchObject({ kind: 'allow' });
    // A denial carries positions of its own text, whatever was cached for the shape.
    const d1 = policy.decide('SELECT 1 FROM "bob/secret".t', alice, inSales);
    const d2 = policy.decide('SELECT 123456 FROM "bob/secret".t', alice, inSales);
    expect(d1).toMatchObject({ kind: 'deny', error: { position: 15 } });
    expect(d2).toMatchObject({ kind: 'deny', error: { position: 20 } });
    // The same rights check runs on a shape hit: another principal is still denied.
    const bob = { user: 'bob', repos: new Map() };
    expect(policy.decide('SELECT * FROM "alice/sales".t WHERE id = 77', bob, inSales)).toMatchObject({ kind: 'deny', error: { code: '42501' } });
    // A rewrite's text is the statement's own, numbers included.
    const r1 = policy.decide('ALTER TABLE t ALTER COLUMN c TYPE numeric(10,2)', alice, inSales);
    const r2 = policy.decide('ALTER TABLE t ALTER COLUMN c TYPE numeric(12,4)', alice, inSales);
    expect(r1).toMatchObject({ kind: 'rewrite', sql: 'ALTER TABLE t ALTER COLUMN c TYPE numeric(10,2) USING "c"::numeric(10,2)' });
    expect(r2).toMatchObject({ kind: 'rewrite', sql: 'ALTER TABLE t ALTER COLUMN c TYPE numeric(12,4) USING "c"::numeric(12,4)' });
    await policy.close();
  });

  it('a repeated allow is reused only for the same rights snapshot and search path', async () => {
    const { createPolicy } = await import('../../../src/policy/index.js');
    const { alice, inSales } = await import('./fixture.js');
    const policy = await createPolicy({ maxStatementBytes: 1 << 20 });
    const sql = 'SELECT * FROM t WHERE id = 5';
    expect(policy.decide(sql, alice, inSales)).toMatchObject({ kind: 'allow' });
    expect(policy.decide(sql, alice, inSales)).toBe(policy.decide(sql, alice, inSales));
    // Rights reloaded without the repo (a new snapshot): denied, although the text was allowed before.
    const revoked = { user: alice.user, repos: new Map([...alice.repos].filter(([name]) => name !== 'alice/sales')) };
    expect(policy.decide(sql, revoked, inSales)).toMatchObject({ kind: 'deny' });
    // Another search path (a new session object after SET): resolved again, and refused there.
    expect(policy.decide(sql, alice, { ...inSales, searchPath: ['bob/secret'] })).toMatchObject({ kind: 'deny', error: { code: '42501' } });
    expect(policy.decide('SELECT * FROM t WHERE id = 6', alice, inSales)).toMatchObject({ kind: 'allow' });
    await policy.close();
  });

  it('clients with their own session objects but equal paths share the reused allow', async () => {
    const { createPolicy } = await import('../../../src/policy/index.js');
    const { alice, inSales } = await import('./fixture.js');
    const policy = await createPolicy({ maxStatementBytes: 1 << 20 });
    const sql = 'SELECT * FROM t WHERE id = 5';
    policy.decide(sql, alice, inSales); // analysed
    const first = policy.decide(sql, alice, inSales); // remembered
    const other = { searchPath: [...inSales.searchPath], defaultSearchPath: inSales.defaultSearchPath && [...inSales.defaultSearchPath] };
    expect(policy.decide(sql, alice, other)).toBe(first);
    // Another user's decision does not displace alice's.
    const bob = { user: 'bob', repos: new Map(alice.repos) };
    expect(policy.decide(sql, bob, other)).not.toBe(first);
    expect(policy.decide(sql, alice, inSales)).toBe(first);
    // A path equal in length but not in value is resolved again.
    expect(policy.decide(sql, alice, { ...inSales, searchPath: inSales.searchPath.map((s, i) => (i === 0 ? 'bob/secret' : s)) })).toMatchObject({ kind: 'deny' });
    await policy.close();
  });
});

describe('settings that change how Postgres reads a statement: any the front ends read exactly', () => {
  it.each([
    ['SET standard_conforming_strings = off', 'allow'],
    ["SELECT set_config('standard_conforming_strings', 'off', false)", 'allow'],
    ['SET client_encoding = SJIS', 'allow'],
    ["SET client_encoding TO 'LATIN1'", 'allow'],
    ["SELECT set_config('client_encoding', 'BIG5', false)", 'allow'],
    // Postgres takes them (or refuses an encoding it does not know): statements in ASCII pass after (misread).
    ['SET client_encoding = EUC_TW', 'allow'],
    ["SET client_encoding TO 'MULE_INTERNAL'", 'allow'],
    ["SELECT set_config('client_encoding', 'JOHAB', false)", 'allow'],
    ["SELECT set_config('client_encoding', $1, false)", 'allow'],
    ["SET client_encoding = 'no such thing'", 'allow'],
    ['RESET standard_conforming_strings', 'allow'],
    ['SET client_encoding TO DEFAULT', 'allow'],
  ])('%s → %s', async (sql, kind) => {
    const { decide } = await import('./fixture.js');
    const d = await decide(sql);
    expect(d.kind).toBe(kind);
    if (d.kind === 'deny') expect(d.error.code).toBe('0A000');
  });
});
