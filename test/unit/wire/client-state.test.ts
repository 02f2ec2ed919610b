// A client's session state and a backend's, as statements succeed on it: settings (with their
// transaction), prepared statements, pins; and the difference a backend needs to be the client's.
import { describe, expect, it } from 'vitest';
import type { SessionEffect } from '../../../src/policy/index.js';
import { BackendState } from '../../../src/wire/backend-state.js';
import { ClientState } from '../../../src/wire/client-state.js';
import { checkSql, noteSettingName, parseCheck } from '../../../src/wire/state-check.js';
import { OtherSettings, setConfigValue, settingsDiff, settingsId } from '../../../src/wire/session-settings.js';

const LOGIN = new Map([
  ['TimeZone', 'UTC'],
  ['application_name', ''],
  ['DateStyle', 'ISO, MDY'],
  ['server_version', '17.10'],
  ['standard_conforming_strings', 'on'],
  ['client_encoding', 'UTF8'],
]);
const builtins = { has: (name: string) => ['now', 'lower', 'count'].includes(name) };

function client(greeting: Record<string, string> = {}, startup: Record<string, string> = {}): ClientState {
  const other = new Map(Object.entries(startup).map(([n, v]) => [n, setConfigValue(n, v)]));
  return new ClientState(new Map([...LOGIN, ...Object.entries(greeting)]), other);
}

/** Applies a statement's effects to both, then ends its (implicit) transaction. */
function run(c: ClientState, b: BackendState, effects: SessionEffect[], text?: string, committed = true): void {
  c.applyEffects(effects, text, b, builtins);
  c.endTransaction(committed, b);
}

const set = (sql: string, name: string): [SessionEffect[], string] => [[{ kind: 'set_text', name, start: 0, end: sql.length }], sql];

describe('settings', () => {
  it('a new client on a fresh backend: its start-up settings are the difference, in one statement each kind', () => {
    const c = client({ TimeZone: 'Europe/Paris', application_name: 'app' }, { 'app.x': '1', search_path: '"alice/sales"' });
    const b = new BackendState(LOGIN);
    const diff = settingsDiff(c, b)!;
    expect(diff.sql.split('\n;\n')).toEqual([
      "SELECT pg_catalog.set_config('TimeZone', 'Europe/Paris', false), pg_catalog.set_config('application_name', 'app', false)",
      "SELECT pg_catalog.set_config('app.x', '1', false)",
      "SELECT pg_catalog.set_config('search_path', '\"alice/sales\"', false)",
    ]);
    diff.apply();
    b.other.commit();
    // The reported ones come back as ParameterStatus; once they have, nothing is left to do.
    b.reported.set('TimeZone', 'Europe/Paris');
    b.reported.set('application_name', 'app');
    expect(settingsDiff(c, b)).toBeUndefined();
  });

  it("a SET is replayed from the client's own text; RESET returns the client to its start-up value, the backend to none", () => {
    const c = client({}, { statement_timeout: '5s' });
    const b = new BackendState(LOGIN);
    settingsDiff(c, b)!.apply();
    b.other.commit();
    run(c, b, ...set('SET statement_timeout = 1000', 'statement_timeout'));
    expect(settingsDiff(c, b)).toBeUndefined(); // both ran it
    const other = new BackendState(LOGIN);
    expect(settingsDiff(c, other)!.sql).toBe('SET statement_timeout = 1000');
    run(c, b, [{ kind: 'reset', name: 'statement_timeout', end: 0 }]);
    expect(settingsDiff(c, b)!.sql).toBe("SELECT pg_catalog.set_config('statement_timeout', '5s', false)");
  });

  it('changes in a transaction that rolls back are dropped from both sides', () => {
    const c = client();
    const b = new BackendState(LOGIN);
    c.applyEffects(...set("SET app.y = 'v'", 'app.y'), b, builtins);
    expect(c.other.pending).toBe(true);
    expect(settingsDiff(c, new BackendState(LOGIN))?.sql).toBe("SET app.y = 'v'");
    c.endTransaction(false, b);
    expect(c.other.get('app.y')).toBeUndefined();
    expect(b.other.get('app.y')).toBeUndefined();
    expect(settingsDiff(c, new BackendState(LOGIN))).toBeUndefined();
  });

  it('settingsId: equal for sessions with the same settings, different once one changes, and never equal where settingsDiff finds work', () => {
    const [a, d] = [client({ TimeZone: 'Asia/Tokyo' }, { 'app.x': '1' }), client({ TimeZone: 'Asia/Tokyo' }, { 'app.x': '1' })];
    const b = new BackendState(LOGIN);
    expect(settingsId(a)).toBe(settingsId(d)); // the same values: start-up settings are shared objects
    expect(settingsId(b)).not.toBe(settingsId(a));
    settingsDiff(a, b)!.apply();
    b.other.commit();
    expect(settingsId(b)).not.toBe(settingsId(a)); // its TimeZone is not reported back yet
    b.reported.set('TimeZone', 'Asia/Tokyo');
    b.reportedStamp++;
    expect(settingsId(b)).toBe(settingsId(a));
    expect(settingsDiff(d, b)).toBeUndefined();
    run(a, b, ...set("SET app.x = '2'", 'app.x'));
    expect(settingsId(b)).toBe(settingsId(a));
    expect(settingsId(d)).not.toBe(settingsId(b));
    expect(settingsDiff(d, b)?.sql).toBe("SELECT pg_catalog.set_config('app.x', '1', false)");
    b.reported.set('server_version', '18.0'); // fixed: not the session's to set
    b.reportedStamp++;
    expect(settingsId(b)).toBe(settingsId(a));
  });

  it('a backend with settings of another client is given RESETs for what this one lacks', () => {
    const a = client();
    const d = client();
    const b = new BackendState(LOGIN);
    run(a, b, ...set("SET app.tenant = 'acme'", 'app.tenant'));
    expect(settingsDiff(d, b)!.sql).toBe('RESET "app.tenant"');
  });

  it("the same value reached by different routes is the same: no replay between clients with the same start-up settings", () => {
    const a = client({}, { 'app.x': '1' });
    const d = client({}, { 'app.x': '1' });
    const b = new BackendState(LOGIN);
    settingsDiff(a, b)!.apply();
    b.other.commit();
    expect(settingsDiff(d, b)).toBeUndefined();
  });

  it('reported settings: ParameterStatus the client would see, its start-up value kept across a RESET', () => {
    const c = client({ TimeZone: 'Asia/Tokyo' });
    expect(c.reportedValue('TimeZone', 'Europe/Paris')).toBe('Europe/Paris'); // its own SET
    expect(c.reportedValue('TimeZone', 'Europe/Paris')).toBeUndefined(); // nothing new
    const b = new BackendState(LOGIN);
    c.applyEffects([{ kind: 'reset', name: 'timezone', end: 0 }], undefined, b, builtins);
    // The backend reports its own default; the client is back at its start-up value.
    expect(c.reportedValue('TimeZone', 'UTC')).toBe('Asia/Tokyo');
    c.resetTo.clear();
    expect(c.reported.get('TimeZone')).toBe('Asia/Tokyo');
  });

  it('a backend reset (DISCARD ALL, its ParameterStatus read by the pool) is back at its login values: a client with the values it had gets them again', () => {
    const c = client({ TimeZone: 'Asia/Tokyo', application_name: 'same' });
    const b = new BackendState(LOGIN);
    b.reported.set('TimeZone', 'Asia/Tokyo'); // another client's, as reported
    b.reported.set('application_name', 'same');
    expect(settingsDiff(c, b)).toBeUndefined();
    b.reset();
    expect(b.reported.get('TimeZone')).toBe('UTC');
    expect(settingsDiff(c, b)!.sql).toBe("SELECT pg_catalog.set_config('TimeZone', 'Asia/Tokyo', false), pg_catalog.set_config('application_name', 'same', false)");
  });

  it('OtherSettings: RESET ALL returns to the defaults, clear forgets all but them', () => {
    const s = new OtherSettings(new Map([['a.b', setConfigValue('a.b', '1')]]));
    s.set('a.b', { sql: 'SET a.b = 2' });
    s.set('c.d', { sql: 'SET c.d = 3' });
    s.commit();
    s.resetAll();
    s.commit();
    expect([...s.names()]).toEqual(['a.b']);
    expect(s.get('a.b')).toBe(setConfigValue('a.b', '1'));
    s.set('c.d', { sql: 'x' });
    s.clear();
    expect(s.pending).toBe(false);
    expect([...s.names()]).toEqual(['a.b']);
  });
});

describe('pins', () => {
  it('temporary objects, advisory locks, LISTEN and held cursors pin; what ends each unpins', () => {
    const c = client();
    const b = new BackendState(LOGIN);
    run(c, b, [{ kind: 'temp' }]);
    run(c, b, [{ kind: 'lock', surely: true }]);
    run(c, b, [{ kind: 'listen' }]);
    run(c, b, [{ kind: 'hold_cursor', name: 'k' }]);
    expect(c.pins()).toEqual(['temp', 'advisory_lock', 'listen', 'cursor']);
    run(c, b, [{ kind: 'discard', what: 'temp', end: 0 }]);
    run(c, b, [{ kind: 'unlock_all' }]);
    run(c, b, [{ kind: 'unlisten', all: true }]);
    run(c, b, [{ kind: 'close_cursor', name: 'k' }]);
    expect(c.pins()).toEqual([]);
    expect(c.pinned).toBe(false);
  });

  it('what cannot be known asks the backend: a try-lock, one unlock, a user function, a pin in a transaction that rolled back', () => {
    for (const effects of [[{ kind: 'lock', surely: false }], [{ kind: 'call', name: 'my_fn' }], [{ kind: 'unknown' }], [{ kind: 'set_unknown', name: 'app.t' }]] as SessionEffect[][]) {
      const c = client();
      run(c, new BackendState(LOGIN), effects);
      expect(c.needsCheck).toBe(true);
    }
    const builtin = client();
    run(builtin, new BackendState(LOGIN), [{ kind: 'call', name: 'now' }]);
    expect(builtin.needsCheck).toBe(false);
    const rolledBack = client();
    run(rolledBack, new BackendState(LOGIN), [{ kind: 'temp' }], undefined, false);
    expect(rolledBack.needsCheck).toBe(true);
  });

  it("the check's answer is the truth: pins follow it, the backend's session settings become the client's", () => {
    const c = client();
    const b = new BackendState(LOGIN);
    run(c, b, [{ kind: 'lock', surely: true }, { kind: 'unknown' }]);
    noteSettingName('app.tenant');
    expect(checkSql()).toContain("'app.tenant'");
    const found = parseCheck(['{"work_mem":"65536"}', 'f', 'f', 'f', 'f', '{"app.tenant":"acme"}']);
    c.applyCheck(found, b);
    expect(c.pins()).toEqual([]);
    expect(c.other.get('app.tenant')).toBe(setConfigValue('app.tenant', 'acme'));
    expect(b.other.get('work_mem')).toBe(setConfigValue('work_mem', '65536'));
    expect(settingsDiff(c, b)).toBeUndefined();
    expect(settingsDiff(client(), b)!.sql.split('\n;\n').sort()).toEqual(['RESET "app.tenant"', 'RESET "work_mem"']);
  });
});

describe('prepared statements in SQL', () => {
  it('PREPARE keeps its text, EXECUTE applies what the statement does, DEALLOCATE ALL and DISCARD ALL forget them', () => {
    const c = client();
    const b = new BackendState(LOGIN);
    const text = 'PREPARE p AS SELECT "alice/s".f()';
    run(c, b, [{ kind: 'prepare', name: 'p', start: 0, end: text.length, inner: [{ kind: 'unknown' }] }], text);
    expect(c.statements.get('p')).toMatchObject({ kind: 'sql', sql: text });
    expect(b.keyOf('p')).toBe(c.statements.get('p')!.key);
    expect(c.needsCheck).toBe(false);
    run(c, b, [{ kind: 'execute', name: 'p' }]);
    expect(c.needsCheck).toBe(true);
    run(c, b, [{ kind: 'deallocate', name: null }]);
    expect(c.statements.size).toBe(0);
    expect(b.statementCount).toBe(0);
    run(c, b, [{ kind: 'prepare', name: 'q', start: 0, end: text.length, inner: [] }], text);
    run(c, b, [{ kind: 'discard', what: 'all', end: 0 }]);
    expect(c.statements.size).toBe(0);
  });
});
