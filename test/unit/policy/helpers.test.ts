// The small pieces: identifier lists, the boundary tokenizer, offsets, the LRU, PL/pgSQL
// expression wrapping.
import { describe, expect, test } from 'vitest';
import { expressionSql } from '../../../src/policy/bodies.js';
import { RecentlyUsedCache } from '../../../src/policy/cache.js';
import { scanTokens } from '../../../src/policy/lexer.js';
import { quoteIdent, splitIdentifiers, truncateIdentifier } from '../../../src/policy/names.js';
import { offsetsOf } from '../../../src/policy/offsets.js';

describe('splitIdentifiers follows SplitIdentifierString', () => {
  const cases: Array<[string, string, string[] | undefined]> = [
    ['a, b', ',', ['a', 'b']],
    ['"alice/sales", public', ',', ['alice/sales', 'public']],
    ['  Foo ,"Bar"', ',', ['foo', 'Bar']],
    ['"a""b"', ',', ['a"b']],
    ['', ',', []],
    ['   ', ',', []],
    ['a,', ',', undefined],
    [',a', ',', undefined],
    ['a b', ',', undefined],
    ['"open', ',', undefined],
    ['bob/secret.t', '.', ['bob/secret', 't']],
    ['"bob/secret".T', '.', ['bob/secret', 't']],
    ['ÄB.c', '.', ['Äb', 'c']],
    ['$user', ',', ['$user']],
  ];
  test.each(cases)('%j split on %j', (text, sep, expected) => {
    expect(splitIdentifiers(text, sep)).toEqual(expected);
  });

  test('lenient mode stops at a signature or type modifier', () => {
    expect(splitIdentifiers('"bob/x".f(int, text)', '.', true)).toEqual(['bob/x', 'f']);
    expect(splitIdentifiers('pg_catalog.varchar(10)', '.', true)).toEqual(['pg_catalog', 'varchar']);
    expect(splitIdentifiers('"bob/x".ty[]', '.', true)).toEqual(['bob/x', 'ty']);
    expect(splitIdentifiers('character varying', '.', true)).toEqual(['character']);
  });

  test('names are cut to 63 bytes without splitting a character', () => {
    expect(truncateIdentifier('a'.repeat(70))).toBe('a'.repeat(63));
    expect(truncateIdentifier('ä'.repeat(40))).toBe('ä'.repeat(31));
    expect(splitIdentifiers(`"${'x'.repeat(80)}"`, ',')).toEqual(['x'.repeat(63)]);
  });

  test('quoteIdent doubles quotes', () => {
    expect(quoteIdent('we"ird')).toBe('"we""ird"');
  });
});

describe('scanTokens', () => {
  const texts = (sql: string): string[] => scanTokens(sql).map((t) => t.text);
  test.each([
    ["a, 'b,c', \"d,e\"", ['a', ',', "'b,c'", ',', 'd,e']],
    ['x -- c, d\n, y', ['x', ',', 'y']],
    ['x /* a /* b */ , */ y', ['x', 'y']],
    ['$$a;b$$ $t$ $$ $t$ ;', ['$$a;b$$', '$t$ $$ $t$', ';']],
    ["E'a\\'b' c", ["E'a\\'b'", 'c']],
    ['U&"a\\0062" x', ['ab', 'x']],
    ['n := (1)', ['n', ':=', '(', '1', ')']],
    ['$1 + $22', ['$1', '+', '$22']],
    ['numeric(10,2)[]', ['numeric', '(', '10', ',', '2', ')', '[', ']']],
    ['a$b $1', ['a$b', '$1']],
  ] as Array<[string, string[]]>)('%j', (sql, expected) => {
    expect(texts(sql)).toEqual(expected);
  });

  test('token offsets index the string', () => {
    const sql = 'ab "c d" e';
    expect(scanTokens(sql).map((t) => sql.slice(t.start, t.end))).toEqual(['ab', '"c d"', 'e']);
  });
});

describe('offsets', () => {
  test('ASCII offsets are identities', () => {
    const o = offsetsOf('SELECT 1');
    expect([o.index(7), o.position(7)]).toEqual([7, 8]);
  });
  test('multi-byte and astral characters', () => {
    // 'ä' is 2 bytes and 1 code unit; '😀' is 4 bytes, 2 code units and 1 character.
    const o = offsetsOf('ä😀x');
    expect(o.index(2)).toBe(1);
    expect(o.index(6)).toBe(3);
    expect(o.position(6)).toBe(3);
  });
});

describe('RecentlyUsedCache', () => {
  test('evicts an entry not hit before one that was', () => {
    const c = new RecentlyUsedCache<number>(2, 1000, 100);
    c.set('a', 1);
    c.set('b', 2);
    expect(c.get('a')).toBe(1);
    c.set('c', 3);
    expect([c.get('a'), c.get('b'), c.get('c')]).toEqual([1, undefined, 3]);
  });
  test('bounds the total key length and refuses huge keys', () => {
    const c = new RecentlyUsedCache<number>(100, 160, 10);
    c.set('x'.repeat(11), 1);
    expect(c.size).toBe(0);
    for (let i = 0; i < 20; i++) c.set(`${i}`.padStart(10, '0'), i);
    expect(c.size).toBe(16);
  });
  test('size 0 disables it', () => {
    const c = new RecentlyUsedCache<number>(0, 1000, 100);
    c.set('a', 1);
    expect(c.get('a')).toBeUndefined();
  });
  test('keeps what is used: entries hit since the last eviction outlive those that were not', () => {
    const c = new RecentlyUsedCache<number>(3, 1000, 100);
    c.set('a', 1);
    c.set('b', 2);
    c.set('c', 3);
    c.get('a');
    c.get('c');
    c.set('d', 4); // b, the one not hit, goes
    expect([c.get('a'), c.get('b'), c.get('c'), c.get('d')]).toEqual([1, undefined, 3, 4]);
    // Every entry hit: one walk clears the marks and the oldest goes.
    c.set('e', 5);
    expect(c.size).toBe(3);
    expect(c.get('e')).toBe(5);
  });
  test('a key set again takes the new value and stays', () => {
    const c = new RecentlyUsedCache<number>(2, 1000, 100);
    c.set('a', 1);
    c.set('b', 2);
    c.set('a', 10);
    c.set('c', 3);
    expect([c.get('a'), c.get('b'), c.get('c')]).toEqual([10, undefined, 3]);
  });
  test('a hit changes nothing in the map: the insertion order stays as it was', () => {
    // What keeps V8 from rebuilding the map's table on every hit (see cache.ts).
    const c = new RecentlyUsedCache<number>(10, 1000, 100);
    for (const k of ['a', 'b', 'c']) c.set(k, 0);
    const map = (c as unknown as { map: Map<string, unknown> }).map;
    for (let i = 0; i < 100; i++) c.get('a');
    expect([...map.keys()]).toEqual(['a', 'b', 'c']);
  });
});

describe('PL/pgSQL expressions become SQL', () => {
  test.each([
    ['SELECT 1', 0, 'SELECT 1'],
    ['x > 1', 2, 'SELECT x > 1'],
    ['n := (SELECT 1)', 3, 'SELECT n ,  (SELECT 1)'],
    ['a[(SELECT 1)] = 2', 3, 'SELECT a[(SELECT 1)] ,  2'],
    ['x=-1', 3, 'SELECT x, -1'],
    ['int', 1, 'SELECT NULL::int'],
  ] as Array<[string, number, string]>)('%j mode %i', (query, mode, sql) => {
    expect(expressionSql(query, mode)).toBe(sql);
  });
});
