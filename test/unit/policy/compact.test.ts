// Large VALUES lists are analysed with their runs of constant rows cut to one row: the decision
// is the one on the whole text, positions included.
import { describe, expect, test } from 'vitest';
import { analyse } from '../../../src/policy/analyse.js';
import { COMPACT_MIN_CHARS, compactValues } from '../../../src/policy/compact.js';
import { decide, inSales, summary } from './fixture.js';

const rows = (n: number, row: (i: number) => string) => Array.from({ length: n }, (_, i) => row(i)).join(', ');

describe('compactValues', () => {
  test('cuts each run of constant rows to its first', () => {
    const c = compactValues(`INSERT INTO t VALUES (1, 'a'), (2, 'b)'), (3, E'c\\'d'), (f(4), 'x'), (-5, NULL), (6.5e-3, DEFAULT), (TRUE, $1), ((7), '')`);
    expect(c?.sql).toBe(`INSERT INTO t VALUES (1, 'a'), (f(4), 'x'), (-5, NULL)`);
  });

  test('keeps rows that name or run something', () => {
    for (const row of [`('"bob/x".t'::regclass)`, '(nextval(1))', '(a)', '((SELECT 1))', '("x")', "(U&'\\0041')", '(1::int)', '(now())', '(current_date)', '(ARRAY[1])']) {
      expect(compactValues(`INSERT INTO t VALUES (1), ${row}, ${row}`)?.sql ?? 'none', row).toBe('none');
    }
  });

  test('does not look into strings, comments and dollar quotes', () => {
    expect(compactValues(`SELECT 'VALUES (1), (2), (3)' /* VALUES (1), (2) */ -- VALUES (1), (2)\n, $$VALUES (1), (2)$$`)).toBeUndefined();
    expect(compactValues(`INSERT INTO t VALUES (1) /* c */ , (2), (3)`)?.sql).toBe('INSERT INTO t VALUES (1)');
  });
});

describe('a large statement', () => {
  const big = (target: string, extra = '') => `INSERT INTO ${target} (a, b) VALUES ${rows(Math.ceil(COMPACT_MIN_CHARS / 20) + 10, (i) => `(${i}, 'row ${i}')`)}${extra}`;

  test('is decided as the whole text is', async () => {
    expect((await decide(big('"alice/sales".t'), inSales)).kind).toBe('allow');
    const d = await decide(big('"bob/secret".t'), inSales);
    expect(summary(d)).toContain('bob/secret');
  });

  test('still checks a row that names something after many constant ones', async () => {
    const d = await decide(big('"alice/sales".t', `, (nextval('"bob/secret".s'), 'x')`), inSales);
    expect(summary(d)).toContain('deny 42501 permission denied for repo "bob/secret"');
    const sql = big('"alice/sales".t', `, ((SELECT max(x) FROM "bob/secret".t), 'x')`);
    const e = await decide(sql, inSales);
    expect(e.kind === 'deny' && e.error.position).toBe(sql.indexOf('"bob/secret".t') + 1);
  });

  test('keeps positions of the whole text in the analysis', () => {
    const sql = big('"alice/sales".t', ', (1, 2) RETURNING nope(');
    const a = analyse(sql);
    expect(a.error?.position).toBe(sql.length + 1);
  });
});
