// Rewrites splice text; Postgres reports error positions in the text it ran, which are mapped
// back to the text the client sent.
import { expect, test } from 'vitest';
import { analyse } from '../../../src/policy/analyse.js';
import { applySplices, originalPosition } from '../../../src/policy/splices.js';

test('splices apply in text order, whatever order they come in', () => {
  const { text, edits } = applySplices('abcdef', [{ from: 4, to: 4, text: 'XY' }, { from: 0, to: 1, text: 'Q' }]);
  expect(text).toBe('QbcdXYef');
  expect(edits).toEqual([[0, 1, 1], [4, 4, 2]]);
});

test('a position after, before and inside an insert maps back', () => {
  const original = 'abcdef';
  const { text, edits } = applySplices(original, [{ from: 2, to: 2, text: '1234' }]);
  expect(text).toBe('ab1234cdef');
  expect(originalPosition(1, text, original, [edits])).toBe(1); // a
  expect(originalPosition(8, text, original, [edits])).toBe(4); // d
  expect(originalPosition(4, text, original, [edits])).toBe(3); // inside the insert: where it went in
});

test('positions count characters, not UTF-16 units', () => {
  const original = "SELECT '😀', pg_class.x FROM pg_class WHERE zz";
  const a = analyse(original);
  const sent = a.rewrite!.sql;
  expect(sent).toBe("SELECT '😀', pg_class.x FROM repobase_catalog.pg_class WHERE zz");
  const zzSent = [...sent].indexOf('z') + 1;
  expect(originalPosition(zzSent, sent, original, a.rewrite!.edits)).toBe([...original].indexOf('z') + 1);
});

test('layers of rewrites (catalog redirect, then the seed rule) map back through both', () => {
  const original = 'SELECT relname FROM pg_class; ALTER TABLE t ALTER c TYPE int, ALTER d TYPE oops';
  const a = analyse(original);
  const sent = a.rewrite!.sql;
  expect(a.rewrite!.edits).toHaveLength(2);
  expect(originalPosition(sent.indexOf('oops') + 1, sent, original, a.rewrite!.edits)).toBe(original.indexOf('oops') + 1);
});
