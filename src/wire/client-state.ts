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
 * - what pins it to its backend (client-pins.ts, the class this one extends).
 *
 * `BackendState` (backend-state.ts) is the other side: what one backend has, as the proxy left it.
 * Both change as statements succeed (`applyEffects`), so that after each transaction the proxy
 * knows both.
 * Pure bookkeeping: no I/O (the relay sends what this module says to send).
 */
import { BACKEND_PID_SETTING, SEQUENCES_SETTING, type SessionEffect } from '../policy/index.js';
import { isReported, reportedName, type BackendState } from './backend-state.js';
import type { Prepared } from './prepared-statement.js';
import { OtherSettings, isChangeableReported, setConfigValue, type SettingValue } from './session-settings.js';
import { SequenceWrites } from './sequences.js';
import { schemaChanged, schemaGeneration } from './schema-generation.js';
import { isCustom } from './custom-settings.js';
import { noteSettingName, type CheckResult } from './state-check.js';
import { ClientPins } from './client-pins.js';

/** Reported settings that decide how Postgres reads statement text. */
const READING = ['standard_conforming_strings', 'client_encoding'];

let clients = 0;

export class ClientState extends ClientPins {
  readonly id = ++clients;
  /** Reported settings as the client was told them (greeting, then each ParameterStatus passed on). */
  readonly reported: Map<string, string>;
  /** Other settings, with the client's start-up values as the defaults RESET returns to. */
  readonly other: OtherSettings;
  /** Named prepared statements, protocol and SQL (one namespace, as in Postgres). */
  readonly statements = new Map<string, Prepared>();
  /** The unnamed statement of the latest Parse with no name (protocol), until the next or a Query. */
  unnamed: Prepared | undefined;
  /** Bumped when `reported` changes (see AheadOfRequests.inSync). */
  reportedStamp = 0;
  /** Kept by `settingsId`. */
  settingsMemo: { stamp: number; id: number } | undefined;
  /** The process id the client was given (BackendKeyData): what pg_backend_pid() shows it. */
  processId: number | undefined;
  /** What its statements may have done to its sequence state since the last capture (sequences.ts). */
  sequenceWrites: SequenceWrites | undefined;
  /** The backend where it last read or made sequence state: elsewhere, its values there may be older than its own. */
  sequenceBackend: BackendState | undefined;

  /**
   * @param greeting the reported settings the client was greeted with (its start-up values included)
   * @param startup its start-up parameters that are not reported ones, as the settings RESET returns to
   */
  constructor(
    greeting: ReadonlyMap<string, string>,
    startup: ReadonlyMap<string, SettingValue>,
    readonly startupReported: ReadonlyMap<string, string> = greeting,
  ) {
    super();
    this.reported = new Map(greeting);
    this.other = new OtherSettings(startup);
    for (const name of startup.keys()) if (isCustom(name)) this.defined.add(name);
  }

  /** Custom settings (`app.tenant`) that exist in the client's session: it set them (custom-settings.ts). */
  readonly defined = new Set<string>();

  /** A custom setting now exists in the client's session, and on the backend serving it. */
  private define(name: string, backend: BackendState): void {
    if (!isCustom(name)) return;
    this.defined.add(name);
    backend.placeholders.add(name);
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

  /** What the backend said it holds (see `CHECK_SQL`): pins follow it, and its settings are the client's from now on. */
  applyCheck(found: CheckResult, backend: BackendState): void {
    this.checkedPins(found);
    // A custom setting that exists there and did not before the code ran was made by it (a rolled-back set_config leaves it, empty).
    for (const name of found.present) if (!backend.placeholders.has(name)) this.define(name, backend);
    const names = new Set([...this.other.names(), ...backend.other.names(), ...found.settings.keys()]);
    for (const name of names) {
      if (reportedName(name, backend) !== undefined) continue; // followed by Postgres' own reports
      const value = found.settings.get(name);
      if (value !== undefined) this.define(name, backend);
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
    if ('name' in e && e.name !== null && (e.kind === 'set' || e.kind === 'set_text' || e.kind === 'set_unknown' || e.kind === 'reset')) {
      noteSettingName(e.name);
      this.define(e.name, backend);
    }
    switch (e.kind) {
      case 'defines':
        return this.define(e.name, backend);
      case 'show':
      case 'reads_custom':
      case 'reads_sessions':
        return; // answered before the statement runs (custom-settings.ts)
      case 'set_text':
        if (this.reportedSet(e.name, backend)) return; // a reported one is told by Postgres
        if (text === undefined) return;
        return this.setBoth(e.name, { sql: text.slice(e.start, e.end) }, backend);
      case 'set':
        if (this.reportedSet(e.name, backend)) return;
        return this.setBoth(e.name, setConfigValue(e.name, e.value), backend);
      case 'set_unknown':
        this.needsCheck = true;
        return;
      case 'reset':
        return this.resetBoth(e.name, backend);
      case 'reset_all':
        this.other.resetAll();
        backend.other.resetAll();
        backend.hiddenTold = undefined; // the stand-in's list too (custom-settings.ts)
        return this.resetReported();
      case 'discard':
        if (e.what === 'sequences' || e.what === 'all') this.forgetSequences();
        this.discardPins(e.what);
        if (e.what !== 'all') return;
        this.other.resetAll();
        backend.other.resetAll();
        backend.hiddenTold = undefined;
        this.resetReported();
        this.statements.clear();
        this.unnamed = undefined;
        backend.forgetStatements();
        return;
      case 'prepare':
        if (text === undefined) return;
        this.statements.set(e.name, { key: `\0sql\0${text.slice(e.start, e.end)}`, kind: 'sql', sql: text.slice(e.start, e.end), text, paramTypes: [], effects: e.inner, at: Date.now(), generation: schemaGeneration() });
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
      case 'lock':
      case 'unlock':
      case 'unlock_all':
      case 'listen':
      case 'unlisten':
      case 'hold_cursor':
      case 'close_cursor':
        return this.applyPin(e);
      case 'drop':
        if (this.temp) this.needsCheck = true; // the last temporary object may be gone: the backend says
        return schemaChanged();
      case 'ddl':
        return schemaChanged();
      case 'savepoint':
        // A ROLLBACK TO undoes what followed the savepoint; the proxy does not follow savepoints.
        if (e.rollback && (this.other.pending || backend.other.pending)) this.needsCheck = true;
        return;
      case 'sequence':
      case 'backend_pid':
      case 'notify':
        return; // handled before the statement runs (Pooling.before)
      case 'sequence_write': {
        const w = (this.sequenceWrites ??= new SequenceWrites());
        if (e.table !== undefined) w.tables.add(e.table);
        else if (e.sequence !== undefined) w.sequences.add(e.sequence);
        else w.every = true;
        return;
      }
      case 'call':
        if (!builtins.has(e.name)) this.codeRan();
        return;
      case 'unknown':
        this.codeRan();
        return;
      case 'names':
        for (const name of e.names) noteSettingName(name);
        // Code that ran and names them most likely set them: they exist in the session (rolled back, empty).
        if (e.ran) for (const name of e.names) this.define(name, backend);
        return;
      default:
        return assertNever(e);
    }
  }

  /**
   * Whether `name` is a reported setting (Postgres tells its value): a RESET of it earlier in the
   * same request no longer decides what the client is told (see `resetTo`).
   */
  private reportedSet(name: string, backend: BackendState): boolean {
    const reported = reportedName(name, backend);
    if (reported === undefined) return false;
    if (this.resetTo.size > 0) this.resetTo.delete(reported);
    return true;
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

  /** Code the proxy cannot see into ran: the backend is asked what it left, and its sequence state captured. */
  private codeRan(): void {
    this.needsCheck = true;
    (this.sequenceWrites ??= new SequenceWrites()).every = true;
  }

  /**
   * The client's sequence state as captured on `backend` (which holds it as a setting now): carried
   * from now on like a start-up setting, so that RESET ALL keeps it (it does not reset currval).
   */
  capturedSequences(state: string, backend: BackendState): void {
    noteSettingName(SEQUENCES_SETTING); // the check asks for it by name (it must not take it for reset)
    const value = setConfigValue(SEQUENCES_SETTING, state);
    this.other.replaceDefault(SEQUENCES_SETTING, value);
    backend.other.set(SEQUENCES_SETTING, value);
    backend.other.commit();
  }

  /**
   * DISCARD SEQUENCES (or ALL): no sequence state left. The backend still holds what the client
   * carried as a setting (DISCARD SEQUENCES resets none): the next request resets it there.
   */
  private forgetSequences(): void {
    this.other.replaceDefault(SEQUENCES_SETTING, undefined);
    this.sequenceWrites = undefined;
  }

  /** A setting that cannot be given to a backend any more goes back to its start-up value (false: not one the client set). */
  resetSetting(name: string): boolean {
    if (this.other.get(name) === undefined) return false;
    this.other.reset(name);
    this.other.commit();
    return true;
  }

  /** Whether the end of the open transaction decides something: setting changes kept apart, a pin taken, an announcement made in it. */
  awaitsTransactionEnd(backend: BackendState): boolean {
    return this.other.pending || backend.other.pending || this.pinnedInTransaction || backend.announcing !== undefined;
  }

  /**
   * The transaction ended: its setting changes are kept if it committed, dropped if it rolled
   * back; a pin taken in a transaction that rolled back may be gone (the check says).
   */
  endTransaction(committed: boolean, backend: BackendState): void {
    backend.endAnnouncing(committed);
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

function assertNever(x: never): never {
  throw new Error(`unexpected session effect ${JSON.stringify(x)}`);
}
