// What each statement does to its session beyond its transaction, as the transaction pooler reads
// it from the decision (src/policy/session-effects.ts).
import { describe, expect, test } from 'vitest';
import type { Decision, SessionEffect } from '../../../src/policy/index.js';
import { decide } from './fixture.js';

/** The effects of each statement of `sql` (allowed or rewritten), without positions. */
async function effectsOf(sql: string): Promise<unknown[][] | undefined> {
  const d: Decision = await decide(sql);
  if (d.kind !== 'allow' && d.kind !== 'rewrite') throw new Error(`${sql}: ${d.kind} ${d.kind === 'deny' ? d.error.message : ''}`);
  return d.effects?.map((list) => list.map(strip));
}

function strip(e: SessionEffect): unknown {
  if (e.kind === 'set_text') return { kind: e.kind, name: e.name };
  if (e.kind === 'prepare') return { kind: e.kind, name: e.name, inner: e.inner.map(strip) };
  if (e.kind === 'reset' || e.kind === 'reset_all' || e.kind === 'discard') {
    const { end: _end, ...rest } = e;
    return rest;
  }
  return e;
}

const one = (...effects: unknown[]) => [effects];

describe('statements without session effects carry none', () => {
  test.each([
    'SELECT 1',
    'BEGIN',
    'COMMIT',
    'SET LOCAL statement_timeout = 1000',
    'SET TRANSACTION ISOLATION LEVEL SERIALIZABLE',
    'CREATE TABLE "alice/sales".t2 (a int DEFAULT my_default())',
    'CREATE VIEW "alice/sales".v AS SELECT "alice/sales".f()',
    'DECLARE c CURSOR FOR SELECT 1',
    'UPDATE "alice/sales".t SET a = 1',
    'SHOW TimeZone',
    "SELECT current_setting('TimeZone')",
    // Dropped when its transaction ends: nothing to pin.
    'CREATE TEMP TABLE t (a int) ON COMMIT DROP',
    'CREATE TEMP TABLE t ON COMMIT DROP AS SELECT 1',
  ])('%s', async (sql) => {
    expect(await effectsOf(sql)).toBeUndefined();
  });
});

describe('settings', () => {
  test.each<[string, unknown[][]]>([
    // A custom setting exists in the session once set, even locally (custom-settings.ts).
    ["SELECT set_config('app.x', 'y', true)", one({ kind: 'defines', name: 'app.x' })],
    ["SET LOCAL app.X = 'y'", one({ kind: 'defines', name: 'app.x' })],
    ['SHOW app.x', one({ kind: 'show', name: 'app.x', start: 0, end: 10 })],
    ["SELECT current_setting('app.x', true), current_setting($1)", one({ kind: 'reads_custom' })],
    ["SELECT set_tenant('app.tenant', 'x')", one({ kind: 'call', name: 'set_tenant' }, { kind: 'names', names: ['app.tenant'], ran: true })],
    ["SET TIME ZONE 'Europe/Paris'", one({ kind: 'set_text', name: 'timezone' })],
    ['SET application_name = x', one({ kind: 'set_text', name: 'application_name' })],
    ['SET "App.X" TO 1', one({ kind: 'set_text', name: 'app.x' })],
    ['SET search_path = "alice/sales", public', one({ kind: 'set_text', name: 'search_path' })],
    ["SET NAMES 'UTF8'", one({ kind: 'set_text', name: 'client_encoding' })],
    ['RESET statement_timeout', one({ kind: 'reset', name: 'statement_timeout' })],
    ['SET work_mem TO DEFAULT', one({ kind: 'reset', name: 'work_mem' })],
    ['RESET ALL', one({ kind: 'reset_all' })],
    ['SET app.x FROM CURRENT', one({ kind: 'set_unknown', name: 'app.x' })],
    ["SELECT set_config('App.Y', 'v', false)", one({ kind: 'set', name: 'app.y', value: 'v' })],
    ["SELECT pg_catalog.set_config('app.y', $1, false)", one({ kind: 'set_unknown', name: 'app.y' })],
    ["SELECT set_config('app.y', 'v', $1)", one({ kind: 'unknown' })],
    [
      'SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY',
      one({ kind: 'set', name: 'default_transaction_isolation', value: 'serializable' }, { kind: 'set', name: 'default_transaction_read_only', value: 'on' }),
    ],
  ])('%s', async (sql, expected) => {
    expect(await effectsOf(sql)).toEqual(expected);
  });

  test('a SET is replayed from its own text, also in a string of several statements', async () => {
    const sql = "SELECT 1; SET TIME ZONE 'UTC'; SELECT 2";
    const d = await decide(sql);
    const set = d.kind === 'allow' ? d.effects?.[1]?.[0] : undefined;
    expect(set?.kind).toBe('set_text');
    if (set?.kind === 'set_text') expect(sql.slice(set.start, set.end).trim()).toBe("SET TIME ZONE 'UTC'");
    expect(d.kind === 'allow' && d.effects?.[0]).toEqual([]);
  });

  test('texts of one shape with different numbers each get their own positions', async () => {
    const a = await decide('SELECT 1; SET statement_timeout = 1000');
    const b = await decide('SELECT 22; SET statement_timeout = 2000');
    const start = (d: Decision) => (d.kind === 'allow' && d.effects?.[1]?.[0]?.kind === 'set_text' ? d.effects[1][0].start : -1);
    expect([start(a), start(b)]).toEqual([9, 10]);
  });
});

describe('prepared statements', () => {
  test.each<[string, unknown[][]]>([
    ['PREPARE p (int) AS SELECT $1', one({ kind: 'prepare', name: 'p', inner: [] })],
    ['PREPARE q AS SELECT "alice/sales".f()', one({ kind: 'prepare', name: 'q', inner: [{ kind: 'unknown' }] })],
    ['EXECUTE p(1)', one({ kind: 'execute', name: 'p' })],
    ['EXPLAIN EXECUTE p(1)', one({ kind: 'execute', name: 'p' })],
    ['CREATE TABLE "alice/sales".x AS EXECUTE p(1)', one({ kind: 'execute', name: 'p' })],
    ['DEALLOCATE p', one({ kind: 'deallocate', name: 'p' })],
    ['DEALLOCATE PREPARE p', one({ kind: 'deallocate', name: 'p' })],
    ['DEALLOCATE ALL', one({ kind: 'deallocate', name: null })],
    ['DISCARD ALL', one({ kind: 'discard', what: 'all' })],
    ['DISCARD PLANS', one({ kind: 'discard', what: 'plans' })],
  ])('%s', async (sql, expected) => {
    expect(await effectsOf(sql)).toEqual(expected);
  });
});

describe('state that pins a client to its backend, and what ends it', () => {
  test.each<[string, unknown[][]]>([
    ['CREATE TEMP TABLE t (a int)', one({ kind: 'temp' })],
    ['CREATE TEMPORARY VIEW v AS SELECT 1', one({ kind: 'temp' })],
    ['CREATE TABLE pg_temp.t (a int)', one({ kind: 'temp' })],
    ['CREATE TEMP SEQUENCE s', one({ kind: 'temp' })],
    ['SELECT 1 AS a INTO TEMP t', one({ kind: 'temp' })],
    ['CREATE TEMP TABLE t AS SELECT 1', one({ kind: 'temp' })],
    ['CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$', one({ kind: 'temp' })],
    ['DISCARD TEMP', one({ kind: 'discard', what: 'temp' })],
    ['DROP TABLE t, pg_temp.u', one({ kind: 'drop' })],
    ['SELECT pg_advisory_lock(1)', one({ kind: 'lock', surely: true })],
    ['SELECT pg_catalog.pg_try_advisory_lock_shared(1, 2)', one({ kind: 'lock', surely: false })],
    ['SELECT pg_advisory_xact_lock(1)', one({ kind: 'call', name: 'pg_advisory_xact_lock' })],
    ['SELECT pg_advisory_unlock(1)', one({ kind: 'unlock' })],
    ['SELECT pg_advisory_unlock_all()', one({ kind: 'unlock_all' })],
    ['LISTEN news', one({ kind: 'listen' })],
    ["NOTIFY news, 'x'", one({ kind: 'notify' })],
    ["SELECT pg_notify('news', 'x'), pg_catalog.pg_notify('b', 'y')", one({ kind: 'notify' })],
    ['UNLISTEN news', one({ kind: 'unlisten', all: false })],
    ['UNLISTEN *', one({ kind: 'unlisten', all: true })],
    ['DECLARE c CURSOR WITH HOLD FOR SELECT 1', one({ kind: 'hold_cursor', name: 'c' })],
    ['CLOSE c', one({ kind: 'close_cursor', name: 'c' })],
    ['CLOSE ALL', one({ kind: 'close_cursor', name: null })],
    ['SAVEPOINT a', one({ kind: 'savepoint', rollback: false })],
    ['ROLLBACK TO SAVEPOINT a', one({ kind: 'savepoint', rollback: true })],
    ["SELECT currval('\"alice/sales\".s')", one({ kind: 'sequence' })],
    ["SELECT nextval('s'), setval('\"alice/sales\".t', 5)", one({ kind: 'sequence_write', sequence: 's' }, { kind: 'sequence_write', sequence: '"alice/sales".t' })],
    ['SELECT nextval($1)', one({ kind: 'sequence_write' })],
    ['INSERT INTO "alice/sales".t VALUES (1)', one({ kind: 'sequence_write', table: '"alice/sales"."t"' })],
    ['INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING', one({ kind: 'sequence_write', table: '"t"' })],
    ["COPY \"Orders 2024\" FROM STDIN", one({ kind: 'sequence_write', table: '"Orders 2024"' })],
    ['UPDATE t SET a = DEFAULT', one({ kind: 'sequence_write', table: '"t"' })],
    ['SELECT pg_backend_pid(), pg_catalog.pg_backend_pid()', one({ kind: 'backend_pid' })],
    ['SELECT a.pid FROM pg_stat_activity a JOIN pg_catalog.pg_locks l USING (pid)', one({ kind: 'backend_pid' }, { kind: 'reads_sessions', what: 'activity' })],
    ['SELECT name FROM pg_prepared_statements', one({ kind: 'reads_sessions', what: 'statements' })],
  ])('%s', async (sql, expected) => {
    expect(await effectsOf(sql)).toEqual(expected);
  });
});

describe('code out of the policy sight', () => {
  test.each<[string, unknown[][]]>([
    ['SELECT "alice/sales".f()', one({ kind: 'unknown' })],
    ['SELECT * FROM "alice/sales".srf()', one({ kind: 'unknown' })],
    ['CALL "alice/sales".p()', one({ kind: 'unknown' })],
    ['DO $$ BEGIN PERFORM 1; END $$', one({ kind: 'unknown' })],
    ['SELECT count(*), count(1) FROM "alice/sales".t', one({ kind: 'call', name: 'count' })],
    ['SELECT my_function(1)', one({ kind: 'call', name: 'my_function' })],
    ['SELECT lower(\'A\'), now()', one({ kind: 'call', name: 'lower' }, { kind: 'call', name: 'now' })],
    ['UPDATE "alice/sales".t SET a = "alice/sales".f(a)', one({ kind: 'unknown' })],
  ])('%s', async (sql, expected) => {
    expect(await effectsOf(sql)).toEqual(expected);
  });

  test('a function body names the custom settings it may set: no effect now, names to look for later', async () => {
    expect(await effectsOf("CREATE FUNCTION \"alice/sales\".f() RETURNS void LANGUAGE sql AS $$ SELECT set_config('App.B', 'c', false) $$")).toEqual(
      one({ kind: 'names', names: ['app.b'], ran: false }),
    );
    expect(await effectsOf("DO $$ BEGIN SET app.t = 'x'; END $$")).toEqual(one({ kind: 'unknown' }, { kind: 'names', names: ['app.t'], ran: true }));
  });

  test('each statement of a string has its own list', async () => {
    expect(await effectsOf("SET a.b = 1; SELECT 1; SELECT pg_advisory_lock(2)")).toEqual([[{ kind: 'set_text', name: 'a.b' }], [], [{ kind: 'lock', surely: true }]]);
  });
});

describe('statements ahead of a refused one', () => {
  test('run first only when none of them has a session effect', async () => {
    const plain = await decide('SELECT 1; SELECT * FROM "bob/secret".t');
    const locking = await decide('SELECT pg_advisory_lock(1); SELECT * FROM "bob/secret".t');
    expect(plain.kind === 'deny' && plain.refusedAt).toBe(9);
    expect(locking.kind === 'deny' && locking.refusedAt).toBeUndefined();
  });
});
