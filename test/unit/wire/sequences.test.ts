// The capture of a pooled client's sequence state after its writes: what is asked after, and what is known not to need it.
import { describe, expect, it } from 'vitest';
import { captureSql, SequenceFreeTables, SequenceWrites } from '../../../src/wire/sequences.js';

describe('sequence captures', () => {
  const writes = (...tables: string[]) => {
    const w = new SequenceWrites();
    for (const t of tables) w.tables.add(t);
    return w;
  };

  it('asks nothing after writes to tables known to take no default from a sequence, under the same role and path', () => {
    const free = new SequenceFreeTables();
    const known = (role: string, path: string) => (table: string) => free.has(role, path, table);
    expect(captureSql(writes('history'), known('alice', '"alice/r"'))?.tables).toEqual(['history']);
    free.add('alice', '"alice/r"', ['history']);
    expect(captureSql(writes('history'), known('alice', '"alice/r"'))).toBeUndefined();
    // Another path or role may name another table by the same name.
    expect(captureSql(writes('history'), known('alice', '"alice/s"'))?.tables).toEqual(['history']);
    expect(captureSql(writes('history'), known('bob', '"alice/r"'))?.tables).toEqual(['history']);
    // Only the tables not known free are asked after; a named sequence always is.
    expect(captureSql(writes('history', 'items'), known('alice', '"alice/r"'))?.tables).toEqual(['items']);
    const named = writes('history');
    named.sequences.add('s');
    expect(captureSql(named, known('alice', '"alice/r"'))?.sql).toContain("ARRAY['s']::text[]");
    free.clear();
    expect(captureSql(writes('history'), known('alice', '"alice/r"'))?.tables).toEqual(['history']);
  });
});
