/**
 * Seeded random scripts of many clients of one user, for the pooling differential test: one
 * global order of steps, each a simple Query or an extended batch of one client, that exercise
 * everything a session holds — settings (SET, SET LOCAL, SET TRANSACTION, set_config, RESET,
 * start-up options), prepared statements of both kinds, sequences, temporary tables, advisory
 * locks, cursors, LISTEN/NOTIFY, savepoints and errors, user functions, DO blocks, DISCARD,
 * multi-statement strings and the catalogs of one's own session.
 *
 * The scripts run against Postgres directly (a backend per client) and through repobase with a few
 * backends for the user, so they never need more backends at once than that: a model of each
 * client counts the ones that hold a backend between steps (a transaction open, or state that
 * pins it) and keeps them under `maxHolders`. Steps never wait for each other's locks (advisory
 * lock keys are per client, rows per client, DDL only while no other transaction is open).
 *
 * `{R}` in a statement stands for the run's repo (a quoted schema name), `{c}` for the client's
 * number.
 */
import { createRandom } from '../../bench/fuzz.js';
import type { Extended, Request } from './script-client.js';

export interface Step {
  client: number;
  request: Request;
}

export interface Script {
  /** Each client's start-up parameters beyond user and database. */
  startup: Record<string, string>[];
  steps: Step[];
}

/** What the user's repo holds before a script runs (run as the user, search_path on the repo). */
export const SCRIPT_SETUP = [
  'CREATE TABLE items (id serial PRIMARY KEY, v text)',
  'CREATE SEQUENCE s',
  'CREATE TABLE kv (k int PRIMARY KEY, v text)',
  "INSERT INTO kv SELECT g, 'v' || g FROM generate_series(0, 31) g",
  'CREATE TABLE shape (a int)',
  'INSERT INTO shape VALUES (1)',
  'CREATE FUNCTION f_set(name text, val text) RETURNS text LANGUAGE sql AS $$ SELECT set_config(name, val, false) $$',
  'CREATE FUNCTION f_one() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$',
  'CREATE FUNCTION f_iso() RETURNS text LANGUAGE sql AS $$ SELECT current_setting(\'transaction_isolation\') $$',
  'CREATE FUNCTION f_lock(k bigint) RETURNS void LANGUAGE sql AS $$ SELECT pg_advisory_lock(k) $$',
  'CREATE FUNCTION f_temp() RETURNS void LANGUAGE plpgsql AS $$ BEGIN CREATE TEMP TABLE IF NOT EXISTS ft (v int); END $$',
  'CREATE FUNCTION f_next() RETURNS bigint LANGUAGE sql AS $$ SELECT nextval(\'s\') $$',
];

type Random = () => number;

interface Model {
  tx: 'none' | 'open' | 'failed';
  /** Statements run in the open transaction. */
  inTx: number;
  /** State that may pin the client (kept when a transaction commits, `txPins` dropped when it rolls back). */
  pins: Set<string>;
  txPins: Set<string>;
  /** Named protocol statements it prepared (maybe). */
  protocol: Set<string>;
  /** It ran an unnamed Parse since its last Query. */
  unnamed: boolean;
}

const SETTINGS: [string, string[]][] = [
  ['TimeZone', ["'UTC'", "'Asia/Tokyo'", "'America/New_York'"]],
  ['DateStyle', ["'ISO, MDY'", "'SQL, DMY'", "'German'"]],
  ['application_name', ["'a1'", "'b2'"]],
  ['IntervalStyle', ['postgres', 'iso_8601']],
  ['extra_float_digits', ['0', '3', '-2']],
  ['statement_timeout', ["'0'", "'5s'", "'1min'"]],
  ['bytea_output', ['hex', 'escape']],
  ['search_path', ['{R}', '{R}, public', 'public, {R}']],
  ['lock_timeout', ["'0'", "'2s'"]],
  ['myapp.a', ["'x'", "'y'"]],
  ['myapp.b', ["'1'", "'2'"]],
];

const SHOWS = [
  ...SETTINGS.map(([name]) => `SHOW ${name}`),
  'SHOW transaction_isolation',
  'SHOW default_transaction_isolation',
  "SELECT current_setting('myapp.a', true), current_setting('myapp.b', true), current_setting('myapp.f', true), current_setting('myapp.d', true)",
  "SELECT current_setting('myapp.a')",
  "SELECT '2020-01-02 03:04:05+00'::timestamptz, '1 day 2 hours'::interval, 1.0::float8 / 3, '\\x41'::bytea",
];

const PROTOCOL_TEXTS: [string, (c: number) => (string | null)[]][] = [
  ['SELECT $1::int + 1', () => ['41']],
  ['SELECT v FROM kv WHERE k = $1', (c) => [String(c)]],
  // Not `SELECT *`: a statement prepared before a change of its result columns is the one
  // difference docs/pooling.md lists (it runs with the new columns where Postgres refuses it).
  ['SELECT a FROM shape', () => []],
  ['SELECT count(*) FROM items', () => []],
  ["SELECT current_setting('TimeZone')", () => []],
  ['SELECT nextval($1)', () => ['s']],
];

const pick = <T>(rnd: Random, list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;

export function generateScript(seed: number, options: { clients: number; steps: number; maxHolders: number }): Script {
  const rnd = createRandom(seed);
  const models: Model[] = [];
  const startup: Record<string, string>[] = [];
  for (let c = 0; c < options.clients; c++) {
    models.push({ tx: 'none', inTx: 0, pins: new Set(), txPins: new Set(), protocol: new Set(), unnamed: false });
    const params: Record<string, string> = {};
    if (rnd() < 0.3) params.application_name = `client${c}`;
    const opts: string[] = [];
    if (rnd() < 0.3) opts.push(`-c TimeZone=${pick(rnd, ['Asia/Tokyo', 'Europe/Paris'])}`);
    if (rnd() < 0.3) opts.push(`-c myapp.a=s${c}`);
    if (rnd() < 0.2) opts.push('-c DateStyle=SQL,DMY');
    if (rnd() < 0.2) opts.push('-c extra_float_digits=0');
    if (opts.length > 0) params.options = opts.join(' ');
    startup.push(params);
  }
  const steps: Step[] = [];
  const holders = () => models.filter(holds).length;
  for (let n = 0; n < options.steps; n++) {
    const c = Math.floor(rnd() * options.clients);
    const m = models[c]!;
    const mayHold = holds(m) || holders() < options.maxHolders;
    const othersInTx = models.some((o, i) => i !== c && o.tx !== 'none');
    steps.push({ client: c, request: next(rnd, m, c, n, mayHold, othersInTx) });
  }
  // Everyone ends its transaction, so that the last catalog looks compare quiet sessions.
  for (const [c, m] of models.entries()) if (m.tx !== 'none') steps.push({ client: c, request: { query: 'ROLLBACK' } });
  return { startup, steps };
}

function holds(m: Model): boolean {
  return m.tx !== 'none' || m.pins.size > 0 || m.txPins.size > 0;
}

function pin(m: Model, what: string): void {
  // A session advisory lock outlives a transaction that rolls back; the other pins do not.
  (m.tx === 'none' || what === 'lock' ? m.pins : m.txPins).add(what);
}

function unpin(m: Model, test: (p: string) => boolean): void {
  // Only outside a transaction is a release certain (one that rolls back brings the pin back).
  if (m.tx !== 'none') return;
  for (const p of [...m.pins]) if (test(p)) m.pins.delete(p);
}

const q = (query: string): Request => ({ query });

/** The next step of client `c`, and what it does to the model. */
function next(rnd: Random, m: Model, c: number, n: number, mayHold: boolean, othersInTx: boolean): Request {
  if (m.tx === 'failed') {
    const r = rnd();
    if (r < 0.5) return end(m, 'ROLLBACK');
    if (r < 0.7) return end(m, 'COMMIT');
    return q('SELECT 1'); // 25P02
  }
  if (m.tx === 'open') {
    m.inTx++;
    if (rnd() < Math.min(0.5, 0.08 * m.inTx)) return end(m, pick(rnd, ['COMMIT', 'ROLLBACK', 'END', 'COMMIT']));
    if (m.inTx === 1 && rnd() < 0.35) return q(pick(rnd, ['SET TRANSACTION ISOLATION LEVEL SERIALIZABLE', 'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ', 'SET TRANSACTION READ ONLY']));
    const r = rnd();
    if (r < 0.25) return inTransaction(rnd, m, c, n);
    if (r < 0.3) {
      m.tx = 'failed';
      return q(pick(rnd, ['SELECT 1/0', 'SELECT * FROM nope']));
    }
    return anywhere(rnd, m, c, n, true);
  }
  // Outside a transaction.
  if (holds(m) && rnd() < 0.3) return release(rnd, m);
  const r = rnd();
  if (mayHold && r < 0.15) {
    m.tx = 'open';
    m.inTx = 0;
    return q(pick(rnd, ['BEGIN', 'BEGIN', 'START TRANSACTION', 'BEGIN ISOLATION LEVEL REPEATABLE READ']));
  }
  if (mayHold && r < 0.27) return pinning(rnd, m, c);
  if (!othersInTx && r < 0.29) return q(`ALTER TABLE shape ADD COLUMN c${n} int`);
  if (r < 0.34) {
    const statement = pick(rnd, ['DISCARD ALL', 'DISCARD PLANS', 'DISCARD SEQUENCES', 'RESET ALL', 'DEALLOCATE ALL']);
    if (statement === 'DISCARD ALL') return discardAll(m);
    if (statement === 'DEALLOCATE ALL') m.protocol.clear();
    return q(statement);
  }
  if (r < 0.42) return multi(rnd, m, c, n);
  return anywhere(rnd, m, c, n, false);
}

function end(m: Model, how: string): Request {
  const committed = m.tx === 'open' && (how === 'COMMIT' || how === 'END');
  for (const p of m.txPins) if (committed) m.pins.add(p);
  m.txPins.clear();
  m.tx = 'none';
  m.inTx = 0;
  return q(how);
}

function discardAll(m: Model): Request {
  m.pins.clear();
  m.protocol.clear();
  m.unnamed = false;
  return q('DISCARD ALL');
}

/** Statements that take state which pins the client to its backend. */
function pinning(rnd: Random, m: Model, c: number): Request {
  const r = Math.floor(rnd() * 7);
  switch (r) {
    case 0:
      pin(m, 'temp:tt');
      return q('CREATE TEMP TABLE tt (v int)');
    case 1:
      pin(m, 'lock');
      return q(`SELECT pg_advisory_lock(${1000 + c})`);
    case 2:
      pin(m, 'lock');
      return q('SELECT pg_try_advisory_lock(42)');
    case 3:
      pin(m, 'listen');
      return q(`LISTEN ${pick(rnd, ['cha', 'chb'])}`);
    case 4:
      pin(m, 'cursor');
      return q('DECLARE h CURSOR WITH HOLD FOR SELECT g FROM generate_series(1, 4) g');
    case 5:
      pin(m, 'lock');
      return q(`SELECT f_lock(${2000 + c})`);
    default:
      pin(m, 'temp:ft');
      return q('SELECT f_temp()');
  }
}

/** What ends pins (outside a transaction). */
function release(rnd: Random, m: Model): Request {
  const r = Math.floor(rnd() * 8);
  switch (r) {
    case 0:
      return discardAll(m);
    case 1:
      unpin(m, (p) => p.startsWith('temp:'));
      return q('DISCARD TEMP');
    case 2:
      unpin(m, (p) => p === 'lock');
      return q('SELECT pg_advisory_unlock_all()');
    case 3:
      unpin(m, (p) => p === 'listen');
      return q('UNLISTEN *');
    case 4:
      unpin(m, (p) => p === 'cursor');
      return q('CLOSE ALL');
    case 5:
      unpin(m, (p) => p === 'temp:tt');
      return q('DROP TABLE IF EXISTS tt');
    case 6:
      return q(pick(rnd, ['SELECT pg_advisory_unlock(42)', 'UNLISTEN cha', 'FETCH 2 FROM h', 'CLOSE h', 'INSERT INTO tt VALUES (1)', 'SELECT count(*) FROM tt']));
    default:
      return discardAll(m);
  }
}

/** Statements only a transaction block makes sense of. */
function inTransaction(rnd: Random, m: Model, c: number, n: number): Request {
  const r = Math.floor(rnd() * 14);
  switch (r) {
    case 12:
      return pinning(rnd, m, c);
    case 13:
      return q(`SELECT set_config('myapp.a', 't${n}', false)`);
    case 0:
      return q(`SET LOCAL TimeZone = ${pick(rnd, ["'Asia/Tokyo'", "'UTC'"])}`);
    case 1:
      return q(`SET LOCAL myapp.a = 'l${n}'`);
    case 2:
      return q(`SELECT set_config('myapp.b', 'l${n}', true)`);
    case 3:
      return q(`SET LOCAL search_path = ${pick(rnd, ['{R}', 'public, {R}'])}`);
    case 4:
      return q('SAVEPOINT sp');
    case 5:
      return q(pick(rnd, ['ROLLBACK TO SAVEPOINT sp', 'RELEASE SAVEPOINT sp']));
    case 6:
      return q('DECLARE c CURSOR FOR SELECT g FROM generate_series(1, 3) g');
    case 7:
      return q(pick(rnd, ['FETCH c', 'CLOSE c']));
    case 8:
      return q('CREATE TEMP TABLE tx (v int) ON COMMIT DROP');
    case 9:
      return q(`SELECT pg_advisory_xact_lock(${3000 + c})`);
    case 10:
      return q(`UPDATE kv SET v = 'u${n}' WHERE k = ${c}`);
    default:
      return q(pick(rnd, ['SELECT f_iso()', 'SHOW transaction_isolation', 'SELECT f_one()']));
  }
}

/** Statements for inside or outside a transaction that pin nothing for long. */
function anywhere(rnd: Random, m: Model, c: number, n: number, inTx: boolean): Request {
  const r = Math.floor(rnd() * 15);
  switch (r) {
    case 0:
    case 1: {
      const [name, values] = pick(rnd, SETTINGS);
      return q(rnd() < 0.8 ? `SET ${name} = ${pick(rnd, values)}` : `RESET ${name}`);
    }
    case 2:
      return q(`SELECT set_config('${pick(rnd, ['myapp.a', 'myapp.b', 'TimeZone'])}', '${pick(rnd, ['UTC', 'Asia/Tokyo', 'v' + n])}', false)`);
    case 3:
    case 4:
      return q(pick(rnd, SHOWS));
    case 5:
      return q(pick(rnd, ["SELECT nextval('s')", "SELECT currval('s')", 'SELECT lastval()', "SELECT setval('s', 100)", 'SELECT f_next()']));
    case 6:
      return q(pick(rnd, ["INSERT INTO items (v) VALUES ('a') RETURNING id", "INSERT INTO items (v) VALUES ('b')", "SELECT currval(pg_get_serial_sequence('items', 'id'))", 'SELECT lastval()']));
    case 7:
      return extended(rnd, m, c);
    case 8:
      return q(pick(rnd, ['PREPARE q0 (int) AS SELECT $1 * 2', 'PREPARE q1 AS SELECT a FROM shape', 'EXECUTE q0(21)', 'EXECUTE q1', 'DEALLOCATE q0', 'DEALLOCATE q1']));
    case 9:
      return q(pick(rnd, [`SELECT f_set('myapp.f', 'f${n}')`, 'SELECT f_one()', "DO $$BEGIN PERFORM set_config('myapp.d', 'd', false); END$$", 'DO $$BEGIN PERFORM 1; END$$']));
    case 10:
      return q(
        pick(rnd, [
          'SELECT name, statement, from_sql, parameter_types::text FROM pg_prepared_statements ORDER BY name',
          'SELECT count(*) FROM pg_stat_activity WHERE usename = current_user',
          'SELECT state, query FROM pg_stat_activity WHERE pid = pg_backend_pid()',
          "SELECT count(*) FROM pg_stat_activity WHERE usename = current_user AND state = 'idle'",
          'SELECT name, is_holdable FROM pg_cursors ORDER BY name',
          "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() ORDER BY 1",
          'SELECT c FROM pg_listening_channels() c ORDER BY 1',
          'SELECT count(*) FROM pg_stat_activity WHERE pid = pg_backend_pid()',
        ]),
      );
    case 11:
      return q(pick(rnd, [`NOTIFY cha, 'm${n}'`, `SELECT pg_notify('chb', 'n${n}')`, `NOTIFY chb`]));
    case 12:
      return q(pick(rnd, [`SELECT v FROM kv WHERE k = ${c}`, 'SELECT * FROM shape', 'SELECT count(*) FROM items', 'SELECT count(*) FROM tt']));
    case 13:
      if (inTx) m.tx = 'failed';
      return q(pick(rnd, ['SELECT 1/0', 'SELEC 1', 'SELECT * FROM nope']));
    default:
      return q(pick(rnd, ['SELECT pg_advisory_unlock(42)', `SELECT pg_advisory_unlock(${1000 + c})`, 'UNLISTEN cha', 'FETCH 2 FROM h', 'SELECT 1']));
  }
}

/** An extended-protocol batch: a named statement prepared or used, the unnamed one, a Describe or a Close. */
function extended(rnd: Random, m: Model, c: number): Request {
  const r = rnd();
  const named = [...m.protocol];
  if (named.length > 0 && r < 0.4) {
    const name = pick(rnd, named);
    const [, params] = PROTOCOL_TEXTS[Number(name.slice(1)) % PROTOCOL_TEXTS.length]!;
    const batch: Extended[] = [{ bind: params(c), statement: name }, { describe: 'P' }, { execute: true }];
    return { batch };
  }
  if (named.length > 0 && r < 0.5) {
    const name = pick(rnd, named);
    if (rnd() < 0.5) return { batch: [{ describe: 'S', name }] };
    m.protocol.delete(name);
    return { batch: [{ close: 'S', name }] };
  }
  if (m.unnamed && r < 0.6) return { batch: [{ bind: [], statement: '' }, { execute: true }] };
  const index = Math.floor(rnd() * PROTOCOL_TEXTS.length);
  const [text, params] = PROTOCOL_TEXTS[index]!;
  if (r < 0.8) {
    // Names collide between clients on purpose: each client's p3 is its own.
    const name = `p${index}`;
    m.protocol.add(name);
    return { batch: [{ parse: text, name }, { bind: params(c), statement: name }, { describe: 'P' }, { execute: true }] };
  }
  m.unnamed = params(c).length === 0;
  return { batch: [{ parse: text }, { bind: params(c) }, { describe: 'P' }, { execute: true }] };
}

/** Two or three statements in one Query string. */
function multi(rnd: Random, m: Model, c: number, n: number): Request {
  const parts: string[] = [];
  const count = 2 + Math.floor(rnd() * 2);
  for (let i = 0; i < count; i++) {
    const step = anywhere(rnd, m, c, n, false);
    if ('query' in step) parts.push(step.query);
  }
  if (rnd() < 0.2) parts.splice(Math.floor(rnd() * parts.length), 0, 'RESET ALL');
  m.unnamed = false;
  return q(parts.join('; '));
}
