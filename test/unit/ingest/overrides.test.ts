/** The `columns` field of an upload: types spelled every way people write them, names, shapes. */
import { describe, expect, test } from 'vitest';
import { parseOverrides, resolveColumns, sqlTypeOf } from '../../../src/ingest/overrides.js';
import type { InferredColumn } from '../../../src/ingest/types.js';
import { GROUPED } from '../../../src/ingest/written.js';
import { PgError } from '../../../src/shared/errors.js';

describe('sqlTypeOf', () => {
  const CASES: [string, string | undefined][] = [
    ['TEXT', 'text'],
    ['text', 'text'],
    ['BigInt', 'bigint'],
    ['INTEGER', 'integer'],
    ['NUMERIC', 'numeric'],
    ['NUMERIC(10,2)', 'numeric(10,2)'],
    ['numeric( 10 , 2 )', 'numeric(10,2)'],
    ['NUMERIC(12)', 'numeric(12,0)'],
    ['NUMERIC(5,-2)', 'numeric(5,-2)'],
    ['NUMERIC(1000,1000)', 'numeric(1000,1000)'],
    ['NUMERIC(0,0)', undefined],
    ['NUMERIC(1001)', undefined],
    ['NUMERIC(10,2,1)', undefined],
    ['DOUBLE PRECISION', 'double precision'],
    ['double   precision', 'double precision'],
    ['BOOLEAN', 'boolean'],
    ['DATE', 'date'],
    ['TIMESTAMP', 'timestamp without time zone'],
    ['TIMESTAMP WITHOUT TIME ZONE', 'timestamp without time zone'],
    ['TIMESTAMP WITH TIME ZONE', 'timestamp with time zone'],
    [' jsonb ', 'jsonb'],
    ['UUID', 'uuid'],
    ['MONEY', undefined],
    ['VARCHAR(20)', undefined],
    ['TEXT[]', undefined],
    ['text); DROP TABLE t; --', undefined],
    ['', undefined],
  ];
  test.each(CASES)('%j → %j', (spelling, type) => {
    expect(sqlTypeOf(spelling)).toBe(type);
  });
});

describe('parseOverrides', () => {
  test('entries with a name, a type, both, neither; null keeps', () => {
    expect(parseOverrides('[{"name": "zip", "type": "TEXT"}, {}, {"type": "numeric(10,2)"}, {"name": "Total €", "type": null}]')).toEqual([
      { name: 'zip', type: 'text' },
      { name: undefined, type: undefined },
      { name: undefined, type: 'numeric(10,2)' },
      { name: 'Total €', type: undefined },
    ]);
  });

  const REFUSED: [string, string, string][] = [
    ['not JSON', '[{', '22023'],
    ['an object', '{}', '22023'],
    ['empty', '[]', '22023'],
    ['an entry that is not an object', '[{}, "TEXT"]', '22023'],
    ['an entry that is an array', '[[]]', '22023'],
    ['an unknown key', '[{"nullable": true}]', '22023'],
    ['a name that is not a string', '[{"name": 5}]', '22023'],
    ['a type that is not a string', '[{"type": ["TEXT"]}]', '22023'],
    ['an unknown type', '[{"type": "MONEY"}]', '22023'],
    ['a blank name', '[{"name": " "}]', '42602'],
    ['an empty name', '[{"name": ""}]', '42602'],
    ['a name with a tab', '[{"name": "a\\tb"}]', '42602'],
    ['a name longer than 63 bytes', `[{"name": "${'é'.repeat(32)}"}]`, '42602'],
    ['a system column', '[{"name": "ctid"}]', '42602'],
    ['a repeated name', '[{"name": "a"}, {"name": "a"}]', '22023'],
  ];
  test.each(REFUSED)('refuses %s', (_, text, code) => {
    let caught: unknown;
    try {
      parseOverrides(text);
    } catch (err: unknown) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PgError);
    expect((caught as PgError).code).toBe(code);
  });

  test('names are case-sensitive, as quoted identifiers are', () => {
    expect(parseOverrides('[{"name": "A"}, {"name": "a"}, {"name": "XMIN"}]').map((o) => o.name)).toEqual(['A', 'a', 'XMIN']);
  });
});

describe('resolveColumns', () => {
  const inferred: InferredColumn[] = [
    { name: 'when', type: 'date' as const, written: { layout: 'MM/DD/YYYY' as const } },
    { name: 'zip', type: 'text' as const },
    { name: 'amount', type: 'double precision' as const, written: { layout: GROUPED } },
  ];

  test('no overrides: the inferred columns', () => {
    expect(resolveColumns(inferred, undefined)).toEqual(inferred);
  });

  test('names and types replace; a type of the same family keeps how values are written, another drops it', () => {
    expect(resolveColumns(inferred, parseOverrides('[{"type": "TIMESTAMP"}, {"name": "postcode"}, {"type": "NUMERIC(10,2)"}]'))).toEqual([
      { name: 'when', type: 'timestamp without time zone', written: { layout: 'MM/DD/YYYY' } },
      { name: 'postcode', type: 'text' },
      { name: 'amount', type: 'numeric(10,2)', written: { layout: GROUPED } },
    ]);
    expect(resolveColumns(inferred, parseOverrides('[{"type": "TEXT"}, {}, {"type": "TEXT"}]'))).toEqual([
      { name: 'when', type: 'text' },
      { name: 'zip', type: 'text' },
      { name: 'amount', type: 'text' },
    ]);
    expect(resolveColumns(inferred, parseOverrides('[{"type": "BIGINT"}, {}, {"type": "DATE"}]')).map((c) => c.written)).toEqual([undefined, undefined, undefined]);
    expect(resolveColumns([{ name: 'd', type: 'text', ambiguous: ['MM/DD/YYYY', 'DD/MM/YYYY'] }], parseOverrides('[{"type": "DATE"}]'))).toEqual([{ name: 'd', type: 'date' }]);
  });

  test('the wrong number of entries, and a new name another column has', () => {
    expect(() => resolveColumns(inferred, parseOverrides('[{}, {}]'))).toThrow('columns has 2 entries; the file has 3 columns');
    expect(() => resolveColumns(inferred, parseOverrides('[{"name": "zip"}, {}, {}]'))).toThrow('more than one column would be named "zip"');
    // Swapping two names is fine.
    expect(resolveColumns(inferred, parseOverrides('[{}, {"name": "amount"}, {"name": "zip"}]')).map((c) => c.name)).toEqual(['when', 'amount', 'zip']);
  });
});
