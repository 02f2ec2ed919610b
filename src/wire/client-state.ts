/**
 * A wire client's session state, carried by the proxy so that the client can be served by any
 * backend of its role between transactions (pooling by transaction) and see what it would see on
 * a backend of its own:
 *
 * - its settings (start-up parameters, SET/RESET, set_config(…, false)): see session-settings.ts;
 * - its named prepared statements (protocol Parse with a name, SQL PREPARE), prepared again,
 *   unseen, on a backend that lacks them, and shared between a role's clients by text and
 *   parameter types: a backend keeps one server statement per (text, types) and each client's
 *   name maps onto it;
 * - what pins it to its backend: state that lives in one backend and cannot be made again on
 *   another — temporary objects, session advisory locks, LISTEN, cursors WITH HOLD — and code
 *   the policy could not see into, until the backend has been asked what it left (the check).
 *
 * `BackendState` is the other side: what one backend has, as the proxy left it. Both change as
 * statements succeed (`applyEffects`), so that after each transaction the proxy knows both.
 * Pure bookkeeping: no I/O (the relay sends what this module says to send).
 */
import { BACKEND_PID_SETTING, SENDERS_PREFIX, type SessionEffect } from '../policy/index.js';
import { OtherSettings, isChangeableReported, setConfigValue, type SettingValue } from './session-settings.js';

/** Reported settings that decide how Postgres reads statement text. */
const READING = ['standard_conforming_strings', 'client_encoding'];

/** Why a client keeps its backend between transactions (the metrics' `reason` label). */
export type PinReason = 'temp' | 'advisory_lock' | 'listen' | 'cursor' | 'unknown';
export const PIN_REASONS: readonly PinReason[] = ['temp', 'advisory_lock', 'listen', 'cursor', 'unknown'];

/** A named prepared statement of a client. */
export interface Prepared {
  /** Text and parameter types (protocol), or the PREPARE statement (SQL): equal keys, one server statement. */
  readonly key: string;
  readonly kind: 'protocol' | 'sql';
  /** Protocol: the text Postgres prepares (after the policy's rewrite) and the parameter type oids. SQL: the PREPARE statement. */
  readonly sql: string;
  /** The client's own text (what its effects' positions refer to). */
  readonly text: string;
  readonly paramTypes: readonly number[];
  /** What running it does to the session (its statement's effects). */
  readonly effects: readonly SessionEffect[];
}

/** The key of a protocol-level statement: its text and parameter types. */
export function protocolKey(sql: string, paramTypes: readonly number[]): string {
  return paramTypes.length === 0 ? sql : `${sql}\0${paramTypes.join(',')}`;
}

let clients = 0;

export class ClientState {
  readonly id = ++clients;
  /** Reported settings as the client was told them (greeting, then each ParameterStatus passed on). */
  readonly reported: Map<string, string>;
  /** Other settings, with the client's start-up values as the defaults RESET returns to. */
  readonly other: OtherSettings;
  /** Named prepared statements, protocol and SQL (one namespace, as in Postgres). */
  readonly statements = new Map<string, Prepared>();
  /** The unnamed statement of the latest Parse with no name (protocol), until the next or a Query. */
  unnamed: Prepared | undefined;
  private temp = false;
  private locks = false;
  private listens = false;
  private readonly cursors = new Set<string>();
  /** Set when something may have changed the session out of the proxy's sight: the backend is asked before it is let go. */
  needsCheck = false;
  /** Bumped when `reported` changes (see Pooling.inSync). */
  reportedStamp = 0;
  /** Kept by `settingsId`. */
  settingsMemo: { stamp: number; id: number } | undefined;
  /** A pin was taken in the transaction now open: if it rolls back, the check says what is left. */
  private pinnedInTransaction = false;
  /** The process id the client was given (BackendKeyData): what pg_backend_pid() shows it. */
  processId: number | undefined;

  /**
   * @param greeting the reported settings the client was greeted with (its start-up values included)
   * @param startup its start-up parameters that are not reported ones, as the settings RESET returns to
   */
  constructor(
    greeting: ReadonlyMap<string, string>,
    startup: ReadonlyMap<string, SettingValue>,
    readonly startupReported: ReadonlyMap<string, string> = greeting,
  ) {
    this.reported = new Map(greeting);
    this.other = new OtherSettings(startup);
  }

  /**
   * The client is about to call pg_backend_pid(): from now on its process id is one of its
   * settings, carried to each backend that serves it like a start-up setting, which the stand-in
   * reads (src/policy/backend-pid.ts). Only from its first call: a setting of each client's own
   * would make every change of backend replay it.
   */
  usesBackendPid(): void {
    if (this.processId === undefined) return;
    noteSettingName(BACKEND_PID_SETTING); // the check asks for it by name (it must not take it for reset)
    this.other.addDefault(BACKEND_PID_SETTING, setConfigValue(BACKEND_PID_SETTING, String(this.processId)));
  }

  /** The reasons the client keeps its backend now (empty: it may be pooled). */
  pins(): PinReason[] {
    const out: PinReason[] = [];
    if (this.temp) out.push('temp');
    if (this.locks) out.push('advisory_lock');
    if (this.listens) out.push('listen');
    if (this.cursors.size > 0) out.push('cursor');
    if (this.needsCheck) out.push('unknown');
    return out;
  }

  get pinned(): boolean {
    return this.temp || this.locks || this.listens || this.cursors.size > 0 || this.needsCheck;
  }

  /** What the backend said it holds (see `CHECK_SQL`): pins follow it, and its settings are the client's from now on. */
  applyCheck(found: CheckResult, backend: BackendState): void {
    this.temp = found.temp;
    this.locks = found.locks;
    this.listens = found.listens;
    this.cursors.clear();
    if (found.cursors) this.cursors.add(''); // held, by names the proxy may not know: the next check says when they are gone
    this.needsCheck = false;
    const names = new Set([...this.other.names(), ...backend.other.names(), ...found.settings.keys()]);
    for (const name of names) {
      if (reportedName(name, backend) !== undefined) continue; // followed by Postgres' own reports
      const value = found.settings.get(name);
      if (value === undefined) {
        // Reset out of sight: on a backend of its own the client would be back at its start-up value.
        this.other.reset(name);
        backend.other.reset(name);
      } else {
        this.setBoth(name, setConfigValue(name, value), backend);
      }
    }
    this.other.commit();
    backend.other.commit();
  }

  /**
   * Applies what one statement did, once it succeeded, to the client and to the backend that ran
   * it. `text` is the statement's text (for a SET replayed from it); `prepare` gives the text a
   * SQL PREPARE is made again from.
   */
  applyEffects(effects: readonly SessionEffect[], text: string | undefined, backend: BackendState, builtins: BuiltinFunctions): void {
    for (const e of effects) this.applyEffect(e, text, backend, builtins);
  }

  private applyEffect(e: SessionEffect, text: string | undefined, backend: BackendState, builtins: BuiltinFunctions): void {
    if ('name' in e && e.name !== null && (e.kind === 'set' || e.kind === 'set_text' || e.kind === 'set_unknown' || e.kind === 'reset')) noteSettingName(e.name);
    switch (e.kind) {
      case 'set_text':
        if (text === undefined || isReported(e.name, backend)) return; // a reported one is told by Postgres
        return this.setBoth(e.name, { sql: text.slice(e.start, e.end) }, backend);
      case 'set':
        if (isReported(e.name, backend)) return;
        return this.setBoth(e.name, setConfigValue(e.name, e.value), backend);
      case 'set_unknown':
        this.needsCheck = true;
        return;
      case 'reset':
        return this.resetBoth(e.name, backend);
      case 'reset_all':
        this.other.resetAll();
        backend.other.resetAll();
        return this.resetReported();
      case 'discard':
        if (e.what === 'temp' || e.what === 'all') this.temp = false;
        if (e.what !== 'all') return;
        this.other.resetAll();
        backend.other.resetAll();
        this.resetReported();
        this.statements.clear();
        this.unnamed = undefined;
        backend.forgetStatements();
        this.locks = false;
        this.listens = false;
        this.cursors.clear();
        return;
      case 'prepare':
        if (text === undefined) return;
        this.statements.set(e.name, { key: `\0sql\0${text.slice(e.start, e.end)}`, kind: 'sql', sql: text.slice(e.start, e.end), text, paramTypes: [], effects: e.inner });
        backend.noteServerStatement(e.name, this.statements.get(e.name)!.key);
        return;
      case 'execute': {
        const prepared = this.statements.get(e.name);
        if (prepared !== undefined) this.applyEffects(prepared.effects, prepared.text, backend, builtins);
        return;
      }
      case 'deallocate':
        if (e.name === null) {
          this.statements.clear();
          backend.forgetStatements();
        } else {
          this.statements.delete(e.name);
          backend.forgetServerStatement(e.name);
        }
        return;
      case 'temp':
        this.temp = this.pinnedInTransaction = true;
        return;
      case 'lock':
        if (e.surely) this.locks = this.pinnedInTransaction = true;
        else this.needsCheck = true; // a try may have taken none: the backend says
        return;
      case 'unlock':
        if (this.locks) this.needsCheck = true; // others may be held still: the backend says
        return;
      case 'unlock_all':
        this.locks = false;
        return;
      case 'listen':
        this.listens = this.pinnedInTransaction = true;
        return;
      case 'unlisten':
        if (e.all) this.listens = false;
        else if (this.listens) this.needsCheck = true;
        return;
      case 'hold_cursor':
        this.cursors.add(e.name);
        this.pinnedInTransaction = true;
        return;
      case 'close_cursor':
        if (e.name === null) this.cursors.clear();
        else this.cursors.delete(e.name);
        if (this.cursors.has('')) this.needsCheck = true; // cursors only the check knew of: it says when they are gone
        return;
      case 'savepoint':
        // A ROLLBACK TO undoes what followed the savepoint; the proxy does not follow savepoints.
        if (e.rollback && (this.other.pending || backend.other.pending)) this.needsCheck = true;
        return;
      case 'sequence':
      case 'backend_pid':
      case 'notify':
        return; // handled before the statement runs (Pooling.before)
      case 'call':
        if (!builtins.has(e.name)) this.needsCheck = true;
        return;
      case 'unknown':
        this.needsCheck = true;
        return;
      case 'names':
        for (const name of e.names) noteSettingName(name);
        return;
      default:
        return assertNever(e);
    }
  }

  private setBoth(name: string, value: SettingValue, backend: BackendState): void {
    this.other.set(name, value);
    backend.other.set(name, value);
  }

  private resetBoth(name: string, backend: BackendState): void {
    const reported = reportedName(name, backend);
    if (reported !== undefined) {
      // The backend returns to its own default; the client to its start-up value (restored by the next replay).
      const start = this.startupReported.get(reported);
      if (start !== undefined) this.resetTo.set(reported, start);
      return;
    }
    this.other.reset(name);
    backend.other.reset(name);
  }

  private resetReported(): void {
    for (const [name, value] of this.startupReported) if (isChangeableReported(name, this.startupReported)) this.resetTo.set(name, value);
  }

  /**
   * Reported settings the client reset in the request now running: Postgres reports the backend's
   * default, the client is back at its start-up value (see `reportedValue`). Cleared by the relay
   * at the end of each request.
   */
  readonly resetTo = new Map<string, string>();

  /**
   * A ParameterStatus from the backend serving one of the client's requests: the value to tell
   * the client, or undefined when its view has not changed.
   */
  reportedValue(name: string, value: string): string | undefined {
    const now = this.resetTo.get(name) ?? value;
    if (this.reported.get(name) === now) return undefined;
    this.reported.set(name, now);
    this.reportedStamp++;
    if (READING.includes(name)) this.readingChanged = READING.some((n) => this.reported.get(n) !== this.startupReported.get(n));
    return now;
  }

  /**
   * Whether a setting that decides how Postgres reads statement text (standard_conforming_strings,
   * client_encoding) is no longer what it was at start-up: a function changed it (see `misread`).
   */
  readingChanged = false;

  /**
   * The transaction ended: its setting changes are kept if it committed, dropped if it rolled
   * back; a pin taken in a transaction that rolled back may be gone (the check says).
   */
  endTransaction(committed: boolean, backend: BackendState): void {
    if (committed) {
      this.other.commit();
      backend.other.commit();
    } else {
      this.other.rollback();
      backend.other.rollback();
      if (this.pinnedInTransaction) this.needsCheck = true;
    }
    this.pinnedInTransaction = false;
  }
}

/** The names of the functions built into the server (pg_catalog): calls of any other name are the user's. */
export interface BuiltinFunctions {
  has(name: string): boolean;
}

/** What one backend holds, as the proxy left it. */
export class BackendState {
  /** Reported settings as the backend last reported them (login, then each ParameterStatus). */
  readonly reported: Map<string, string>;
  readonly other = new OtherSettings();
  /** Server statement name → key of what it holds. */
  private readonly byName = new Map<string, string>();
  /** Key → a server statement name holding it. */
  private readonly byKey = new Map<string, string>();
  /** The client statement the backend's unnamed statement holds now. */
  unnamed: Prepared | undefined;
  /** The client that ran on it last: sequence state (currval) is that client's. */
  lastClient: number | undefined;
  /** The client it was announced as serving (notifications.ts): unsaid before another client's request. */
  announced: number | undefined;
  /** Bumped when `reported` changes (see Pooling.inSync). */
  reportedStamp = 0;
  /** Kept by `settingsId`. */
  settingsMemo: { stamp: number; id: number } | undefined;
  /** The client whose settings it had when last compared, and both sides' stamps then. */
  synced: { client: number; clientStamp: number; backendStamp: number } | undefined;
  private serial = 0;

  constructor(
    private readonly login: ReadonlyMap<string, string>,
    /** Its process id (pg_backend_pid() there). */
    readonly processId = 0,
  ) {
    this.reported = new Map(login);
  }

  get statementCount(): number {
    return this.byName.size;
  }

  /** The server statement holding `key`, if the backend has one. */
  serverName(key: string): string | undefined {
    return this.byKey.get(key);
  }

  /** A name under which to prepare `key` here: the client's own when free, else one of the proxy's. */
  nameFor(clientName: string): string {
    if (!this.byName.has(clientName)) return clientName;
    let name: string;
    do name = `repobase_s${++this.serial}`;
    while (this.byName.has(name));
    return name;
  }

  /** Whether a server statement of that name exists (holding anything). */
  hasServerStatement(name: string): boolean {
    return this.byName.has(name);
  }

  keyOf(name: string): string | undefined {
    return this.byName.get(name);
  }

  noteServerStatement(name: string, key: string): void {
    this.forgetServerStatement(name);
    this.byName.set(name, key);
    if (!this.byKey.has(key)) this.byKey.set(key, name);
  }

  forgetServerStatement(name: string): void {
    const key = this.byName.get(name);
    if (key === undefined) return;
    this.byName.delete(name);
    if (this.byKey.get(key) !== name) return;
    this.byKey.delete(key);
    for (const [other, k] of this.byName) {
      if (k === key) {
        this.byKey.set(key, other);
        break;
      }
    }
  }

  forgetStatements(): void {
    this.byName.clear();
    this.byKey.clear();
    this.unnamed = undefined;
  }

  /**
   * Before DISCARD ALL: a backend as fresh as after its login. Its reported settings are back at
   * their login values too (RESET ALL), which Postgres reports to whoever runs the DISCARD ALL
   * (the pool, not a client): they are set here, or the next client with the values the backend
   * had before would be given none of them.
   */
  reset(): void {
    this.reported.clear();
    for (const [name, value] of this.login) this.reported.set(name, value);
    this.reportedStamp++;
    this.other.clear();
    this.forgetStatements();
    this.lastClient = undefined;
    this.synced = undefined;
  }
}

function reportedName(name: string, backend: BackendState): string | undefined {
  for (const n of backend.reported.keys()) if (n.toLowerCase() === name) return n;
  return undefined;
}

function isReported(name: string, backend: BackendState): boolean {
  return reportedName(name, backend) !== undefined;
}

/** What a backend holds that the proxy may not have seen made (see `checkSql`). */
export interface CheckResult {
  /** Session-level settings (pg_settings' source `session`): name → value. */
  settings: ReadonlyMap<string, string>;
  temp: boolean;
  locks: boolean;
  listens: boolean;
  cursors: boolean;
}

/**
 * Names of custom settings (`app.tenant`) this process has seen set or named in a function body.
 * Postgres lists no custom setting anywhere (pg_settings leaves them out), so the check asks for
 * these by name: one a function sets that nothing here ever named is not found.
 */
const customNames = new Set<string>();
const MAX_CUSTOM_NAMES = 1000;

/** Takes note of a setting's name, if it is a custom one (it has a dot). */
export function noteSettingName(name: string): void {
  if (!name.includes('.') || customNames.has(name)) return;
  if (customNames.size >= MAX_CUSTOM_NAMES) customNames.delete(customNames.values().next().value!);
  customNames.add(name);
}

/**
 * Asks a backend what session state it holds: its session-level settings (built-in ones from
 * pg_settings, custom ones by name), whether it has temporary objects, session advisory locks,
 * channels it listens on and holdable cursors. About a millisecond of the backend's time
 * (pg_settings builds every setting): run only after code the proxy could not see into, or to
 * learn whether a pin is over. One row.
 */
export function checkSql(): string {
  const names = [...customNames].map((n) => `'${n.replace(/'/g, "''")}'`);
  return [
    'SELECT',
    "(SELECT coalesce(json_object_agg(name, setting), '{}') FROM pg_catalog.pg_settings WHERE source = 'session')::text,",
    'EXISTS (SELECT FROM pg_catalog.pg_class WHERE relnamespace = pg_catalog.pg_my_temp_schema()),',
    "EXISTS (SELECT FROM pg_catalog.pg_locks WHERE pid = pg_catalog.pg_backend_pid() AND locktype = 'advisory'),",
    `EXISTS (SELECT FROM pg_catalog.pg_listening_channels() c WHERE NOT pg_catalog.starts_with(c, '${SENDERS_PREFIX}')),`,
    'EXISTS (SELECT FROM pg_catalog.pg_cursors WHERE is_holdable),',
    names.length === 0 ? "'{}'" : `(SELECT coalesce(json_object_agg(n, v), '{}') FROM (SELECT n, pg_catalog.current_setting(n, true) AS v FROM pg_catalog.unnest(ARRAY[${names.join(', ')}]::text[]) n) s WHERE v <> '')::text`,
  ].join(' ');
}

/** The check's one row, as its text columns. */
export function parseCheck(row: readonly (string | null)[]): CheckResult {
  const named = [...Object.entries(JSON.parse(row[0] ?? '{}') as Record<string, string>), ...Object.entries(JSON.parse(row[5] ?? '{}') as Record<string, string>)];
  const settings = new Map(named.map(([name, value]) => [name.toLowerCase(), value]));
  return { settings, temp: row[1] === 't', locks: row[2] === 't', listens: row[3] === 't', cursors: row[4] === 't' };
}

function assertNever(x: never): never {
  throw new Error(`unexpected session effect ${JSON.stringify(x)}`);
}
