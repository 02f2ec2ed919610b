// The analysis itself: what it records about each statement, independent of any user.
import { beforeAll, expect, test } from 'vitest';
import { analyse } from '../../../src/policy/analyse.js';
import { loadParsers } from '../../../src/policy/parse.js';

beforeAll(loadParsers);

test('records kind, references with their access, calls, settings and bodies', () => {
  const a = analyse(
    'INSERT INTO "alice/sales".t SELECT count(*) FROM "dave/readonly".u; ' +
      'SET search_path = x, "Y z"; ' +
      'CREATE FUNCTION "alice/sales".f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN (SELECT 1 FROM v); END $$',
  );
  expect(a.error).toBeNull();
  expect(a.statements.map((s) => [s.kind, s.command])).toEqual([
    ['InsertStmt', 'INSERT'],
    ['VariableSetStmt', 'SET'],
    ['CreateFunctionStmt', 'CREATE FUNCTION'],
  ]);
  const [insert, set, create] = a.statements;
  expect(insert?.refs.map((r) => [r.schema, r.name, r.need, r.position])).toEqual([
    ['alice/sales', 't', 'write', 13],
    ['dave/readonly', 'u', 'read', 50],
  ]);
  expect(insert?.functions).toEqual(['count']);
  expect(set?.settings).toEqual([{ kind: 'search_path', value: ['x', 'Y z'], position: null }]);
  expect(create?.bodies).toEqual(['plpgsql']);
  expect(create?.refs.map((r) => [r.kind, r.schema, r.name, r.need, r.create, r.command, r.position])).toEqual([
    ['object', 'alice/sales', 'f', 'own', true, 'CREATE FUNCTION', null],
    ['relation', null, 'v', 'read', false, 'SELECT', null],
  ]);
});

test('is plain data: it survives a structured clone unchanged', () => {
  const a = analyse('ALTER TABLE t ALTER c TYPE int; DO $$ BEGIN PERFORM 1; END $$');
  expect(structuredClone(a)).toEqual(a);
  expect(a.rewrite?.sql).toBe('ALTER TABLE t ALTER c TYPE int USING "c"::int; DO $$ BEGIN PERFORM 1; END $$');
});

test('does not depend on who asks: service refusals are in the analysis', () => {
  const a = analyse('SELECT 1; SET ROLE bob');
  expect(a.statements[1]?.refusal).toMatchObject({ code: '42501' });
  expect(a.statements[0]?.refusal).toBeNull();
});
