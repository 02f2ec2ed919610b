// Which statements cannot change a session setting (the REST API then skips the next reset):
// only what runs no user code and calls no setting function; anything naming a repo may.
import { beforeAll, describe, expect, test } from 'vitest';
import { createPolicy } from '../../../src/policy/index.js';
import type { Policy, Rights } from '../../../src/policy/index.js';

let policy: Policy;
beforeAll(async () => {
  policy = await createPolicy({ maxStatementBytes: 1 << 20 });
});

const rights: Rights = { user: 'alice', repos: new Map([['alice/sales', 'own']]) };
const REST = { searchPath: ['public'], defaultSearchPath: ['public'] };

async function settingFree(sql: string, searchPath: readonly string[] = REST.searchPath): Promise<boolean> {
  const decision = await policy.decide(sql, rights, { ...REST, searchPath });
  expect(decision.kind === 'allow' || decision.kind === 'rewrite', `${sql}: ${decision.kind}`).toBe(true);
  return 'settingFree' in decision && decision.settingFree === true;
}

describe('setting-free statements', () => {
  test.each([
    'SELECT 1',
    'VALUES (1), (2)',
    'SELECT now(), version(), current_database()',
    "SELECT current_setting('work_mem')",
    'SELECT count(*) FROM pg_catalog.pg_am',
    'SELECT relname FROM pg_class', // redirected to the service's filtered view
    'SELECT table_name FROM information_schema.tables',
    'SELECT pg_catalog.format_type(23, -1)',
    'SELECT g FROM generate_series(1, 3) g',
  ])('%s', async (sql) => {
    expect(await settingFree(sql)).toBe(true);
  });
});

describe('statements that may change a setting', () => {
  test.each([
    // a repo's relation may be a view, or have row security, calling set_config
    'SELECT * FROM "alice/sales".t',
    'SELECT 1 FROM "alice/sales".t LIMIT 0',
    'WITH x AS (SELECT 1) SELECT * FROM x, "alice/sales".t',
    // settings themselves
    "SELECT set_config('work_mem', '7MB', false)",
    "SELECT pg_catalog.set_config('work_mem', '7MB', false)",
    'SET work_mem = 1',
    'RESET ALL',
    'SHOW work_mem',
    // user code
    'SELECT "alice/sales".f()',
    'SELECT 1 OPERATOR("alice/sales".+) 2',
    `SELECT 'a'::"alice/sales".d`,
    'SELECT lower_custom(1)', // not known to be built in
    // not a plain query
    'INSERT INTO "alice/sales".t VALUES (1)',
    "DO $$ BEGIN PERFORM set_config('work_mem', '7MB', false); END $$",
    'EXPLAIN SELECT 1',
  ])('%s', async (sql) => {
    expect(await settingFree(sql)).toBe(false);
  });

  test('with a repo on the search path (its unqualified functions and types could be the user\'s)', async () => {
    expect(await settingFree('SELECT 1')).toBe(true);
    expect(await settingFree('SELECT 1', ['alice/sales', 'public'])).toBe(false);
    expect(await settingFree('SELECT 1', ['pg_catalog', 'public'])).toBe(true);
  });

  test('a string of several statements is setting-free only when each one is', async () => {
    expect(await settingFree('SELECT 1; SELECT 2')).toBe(true);
    expect(await settingFree("SELECT 1; SELECT set_config('work_mem', '7MB', false)")).toBe(false);
  });
});
