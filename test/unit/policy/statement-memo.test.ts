/**
 * A client's memo of statements decided by shape: it must give exactly what the policy gives.
 * The comparison it uses (`sameShapeAs`) is held to `literalShape`'s equality on generated texts
 * and on single-character mutations of them; the memo itself to a fresh policy's decisions, step
 * by step, through changes of rights, paths, and texts of every kind.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPolicy, type Decision, type Rights, type Session } from '../../../src/policy/index.js';
import { literalShape, literalSpans, plainSpans, sameShapeAs } from '../../../src/policy/shape.js';
import { StatementMemo } from '../../../src/policy/statement-memo.js';
import { alice, inSales } from './fixture.js';

/** Pieces that lex differently around digits: words with digits, strings, comments, parameters, numbers of every form. */
const piece = fc.constantFrom(
  'SELECT ', 'FROM ', 't1', 'a$2', 'x', 'e', 'E', ' ', '\n', ',', '(', ')', '::', '.', '+', '-', '*', '/', ';', '=',
  "'12'", "E'a\\'3'", "e'4\\\\'", '"c5"', '"d""6"', '$$ 7 $$', '$q$ 8 $q$', '$1', '$23', '-- 9\n', '/* 1 /* 2 */ 3 */',
  '1', '42', '007', '1.5', '.5', '1e10', '2.5E-3', '0x1F', '1_000', '0o17', '0b101', '1abc', '5.', 'é', '$', "'", '"', '--', '/*',
);
const text = fc.array(piece, { maxLength: 14 }).map((p) => p.join(''));
/** What a mutation puts in: characters that start or end tokens, and digits. */
const mutant = fc.constantFrom(...'0123456789 .eE$\'"-/*_xa\n+(');

/** `known` with each of its literals (at `spans`) replaced by digits of its own. */
function withNumbers(known: string, spans: readonly number[], numbers: readonly string[]): string {
  let out = '';
  let copied = 0;
  for (let k = 0; k < spans.length; k += 2) {
    out += known.slice(copied, spans[k]) + numbers[(k / 2) % numbers.length];
    copied = spans[k + 1]!;
  }
  return out + known.slice(copied);
}

describe('sameShapeAs', () => {
  it.each([
    ['SELECT 55', true],
    ['SELECT 05', true],
    ['SELECT 5.5', false],
    ['SELECT 55.', false],
    ['SELECT 5e3', false],
    ['SELECT 5 ', false],
    ['SELECT ', false],
    ['SELECT x', false],
    ['SELECT 5a', false],
    ['SELECT $5', false],
  ])('SELECT 5 and %s: %s', (sql, same) => {
    const spans = literalSpans('SELECT 5')!;
    expect(sameShapeAs(sql, 'SELECT 5', spans)).toBe(same);
    if (same) expect(literalShape(sql)).toBe(literalShape('SELECT 5'));
  });

  it('recognises every text whose numbers alone differ', () => {
    fc.assert(
      fc.property(text, fc.array(fc.stringMatching(/^\d{1,12}$/), { minLength: 1 }), (known, numbers) => {
        const spans = literalSpans(known);
        fc.pre(spans !== undefined && plainSpans(known, spans));
        const sql = withNumbers(known, spans!, numbers);
        expect(sameShapeAs(sql, known, spans!)).toBe(true);
        expect(literalShape(sql)).toBe(literalShape(known));
      }),
      { numRuns: 3000 },
    );
  });

  it('recognises nothing literalShape tells apart (texts with a character changed, inserted or removed)', () => {
    fc.assert(
      fc.property(text, fc.nat(), fc.constantFrom('replace', 'insert', 'remove'), mutant, fc.array(fc.stringMatching(/^\d{1,3}$/), { minLength: 1 }), (known, at, how, c, numbers) => {
        const spans = literalSpans(known);
        fc.pre(spans !== undefined && plainSpans(known, spans));
        const base = withNumbers(known, spans!, numbers);
        const i = base.length === 0 ? 0 : at % base.length;
        const sql = how === 'insert' ? base.slice(0, i) + c + base.slice(i) : base.slice(0, i) + (how === 'replace' ? c : '') + base.slice(i + 1);
        if (sameShapeAs(sql, known, spans!)) expect(literalShape(sql)).toBe(literalShape(known));
      }),
      { numRuns: 20000 },
    );
  });

  it('recognises nothing literalShape tells apart (unrelated texts)', () => {
    fc.assert(
      fc.property(text, text, (known, sql) => {
        const spans = literalSpans(known);
        fc.pre(spans !== undefined && plainSpans(known, spans));
        if (sameShapeAs(sql, known, spans!)) expect(literalShape(sql)).toBe(literalShape(known));
      }),
      { numRuns: 5000 },
    );
  });
});

describe("a client's memo", () => {
  /** A decide that counts its calls and says which of its decisions stand for a shape. */
  function counted() {
    const made = new WeakSet<Decision>();
    const byText = new Map<string, Decision>();
    const calls: string[] = [];
    const decide = (sql: string): Decision => {
      calls.push(sql);
      const shape = literalShape(sql) ?? sql;
      let d = byText.get(shape);
      if (d === undefined) byText.set(shape, (d = { kind: 'allow', changes: [] } as unknown as Decision));
      if (shape !== sql) made.add(d);
      return d;
    };
    return { memo: new StatementMemo(decide, (d) => made.has(d)), calls };
  }

  it('asks the policy once per shape, rights snapshot and session, and for texts without numbers every time', () => {
    const { memo, calls } = counted();
    const other: Session = { searchPath: ['alice/empty'] };
    memo.decide('SELECT * FROM t WHERE id = 1', alice, inSales);
    memo.decide('SELECT * FROM t WHERE id = 22', alice, inSales);
    memo.decide('SELECT * FROM t WHERE id = 333', alice, { searchPath: ['alice/sales'] }); // another object, same path
    expect(calls).toHaveLength(1);
    memo.decide('SELECT * FROM t WHERE id = 6', alice, { ...inSales, standardConformingStrings: false });
    memo.decide('SELECT * FROM t WHERE id = 4', { ...alice }, inSales); // another snapshot
    memo.decide('SELECT * FROM t WHERE id = 5', alice, other);
    memo.decide('SELECT * FROM t WHERE id = 7.5', alice, inSales); // another shape
    memo.decide('SELECT * FROM t', alice, inSales);
    memo.decide('SELECT * FROM t', alice, inSales);
    expect(calls).toHaveLength(7);
  });

  it('remembers no text with a number other than plain digits: what follows it may read otherwise', () => {
    const { memo, calls } = counted();
    memo.decide('SELECT 5.$$ 7 $$', alice, inSales); // a string after `5.`, digits after `5`
    memo.decide('SELECT 6$$ 7 $$', alice, inSales);
    expect(calls).toHaveLength(2);
    expect(literalShape('SELECT 6$$ 7 $$')).not.toBe(literalShape('SELECT 5.$$ 7 $$'));
  });

  it('keeps sixteen shapes, the one remembered first giving its place', () => {
    const { memo, calls } = counted();
    const shapes = Array.from({ length: 17 }, (_, i) => (n: number) => `SELECT c${i} FROM t WHERE id = ${n}`);
    for (const s of shapes.slice(0, 16)) memo.decide(s(1), alice, inSales);
    for (const s of shapes.slice(0, 16).reverse()) memo.decide(s(2), alice, inSales);
    expect(calls).toHaveLength(16);
    memo.decide(shapes[16]!(1), alice, inSales); // in the place of shapes[0]
    memo.decide(shapes[1]!(3), alice, inSales);
    memo.decide(shapes[16]!(3), alice, inSales);
    expect(calls).toHaveLength(17);
    memo.decide(shapes[0]!(3), alice, inSales);
    expect(calls).toHaveLength(18);
  });
});

describe('the memo against the policy, step by step', () => {
  const writeKey: Rights = {
    ...alice,
    repos: new Map([['alice/sales', 'own']]),
    key: { id: 'k1', name: 'loader', access: 'write', repos: ['alice/sales'], reach: alice.repos, ddl: true },
  };
  const revoked: Rights = { user: 'alice', repos: new Map([['alice/empty', 'own']]) };
  const rights = [alice, revoked, writeKey, { ...alice }];
  const sessions: Session[] = [inSales, { searchPath: ['alice/empty'] }, { searchPath: ['alice/sales'], standardConformingStrings: false }, { searchPath: ['bob/secret'] }];
  const statement = fc.tuple(
    fc.constantFrom(
      'SELECT * FROM t WHERE id = #',
      'SELECT abalance FROM "alice/sales".t WHERE aid = #;',
      'UPDATE t SET v = v + -# WHERE id = #',
      'INSERT INTO t VALUES (#, \'#\')',
      'SELECT # FROM "bob/secret".t',
      'SELECT * FROM t WHERE v = E\'\\\\#\' AND id = #',
      'SET statement_timeout = #',
      'SELECT pg_sleep(#)',
      'SELECT * FROM t LIMIT # -- #',
      'DELETE FROM "carol/shared".t WHERE id = #',
      String.raw`SELECT '\', # FROM t -- ' FROM "bob/secret".t`, // one string with standard_conforming_strings off
      'BEGIN',
    ),
    fc.array(fc.oneof(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 999999 })), { minLength: 2, maxLength: 2 }), // texts seen again too
    fc.nat(rights.length - 1),
    fc.nat(sessions.length - 1),
  );

  it("answers from the client's memo, not the policy's caches, for a shape it remembers", async () => {
    const policy = await createPolicy({ maxStatementBytes: 1 << 20, cacheSize: 1 });
    const decide = policy.forClient();
    const a = (n: number) => `SELECT * FROM t WHERE id = ${n}`;
    const b = (n: number) => `SELECT v FROM t WHERE id = ${n}`;
    decide(a(1), alice, inSales);
    const remembered = decide(a(2), alice, inSales); // a decision for the shape: remembered
    decide(b(1), alice, inSales);
    decide(b(2), alice, inSales); // the policy's one shape now
    expect(decide(a(3), alice, inSales)).toBe(remembered);
    expect(policy.decide(a(4), alice, inSales)).not.toBe(remembered); // the policy made it again
    await policy.close();
  });

  const scsOff: Session = { searchPath: ['alice/sales'], standardConformingStrings: false };
  const tempting: [string, Rights, Session][][] = [
    // a text of the same shape, read otherwise with standard_conforming_strings off
    [1, 2, 3].map((n) => [String.raw`SELECT '\', ${n} FROM t -- ' FROM "bob/secret".t`, alice, n < 3 ? inSales : scsOff]),
    // a text decided by its own text (its effects say where its value is), seen twice
    ['SET statement_timeout = 5', 'SET statement_timeout = 5', 'SET statement_timeout = 77'].map((sql) => [sql, alice, inSales]),
    // rights revoked, and another search path
    [1, 2, 3].map((n) => [`SELECT * FROM t WHERE id = ${n}`, n < 3 ? alice : revoked, inSales]),
    [1, 2, 3].map((n) => [`SELECT * FROM t WHERE id = ${n}`, alice, n < 3 ? inSales : sessions[3]!]),
    // a write key's statement, sent with the comment that lends its repo's objects
    [1, 2, 3].map((n) => [`ALTER TABLE t ALTER COLUMN v SET STATISTICS ${n}`, writeKey, inSales]),
  ];

  it.each(tempting.map((steps) => [steps.map(([sql]) => sql).join(' → '), steps] as const))('%s', async (_, steps) => {
    const policy = await createPolicy({ maxStatementBytes: 1 << 20 });
    const reference = await createPolicy({ maxStatementBytes: 1 << 20 });
    const decide = policy.forClient();
    const made: Decision[] = [];
    for (const [sql, r, s] of steps) {
      made.push(await decide(sql, r, s));
      expect(made.at(-1), sql).toEqual(await reference.decide(sql, r, s));
    }
    expect(made.at(-1), 'the last step is decided otherwise than the first').not.toEqual(made[0]);
    await policy.close();
    await reference.close();
  });

  it('gives what a fresh policy gives, for every statement of a sequence', async () => {
    const policy = await createPolicy({ maxStatementBytes: 1 << 20 });
    const reference = await createPolicy({ maxStatementBytes: 1 << 20 });
    await fc.assert(
      fc.asyncProperty(fc.array(statement, { minLength: 1, maxLength: 40 }), async (steps) => {
        const decide = policy.forClient();
        for (const [template, [a, b], r, s] of steps) {
          const sql = template.replace('#', String(a)).replace('#', String(b));
          expect(await decide(sql, rights[r]!, sessions[s]!), sql).toEqual(await reference.decide(sql, rights[r]!, sessions[s]!));
        }
      }),
      { numRuns: 200 },
    );
    await policy.close();
    await reference.close();
  });
});
