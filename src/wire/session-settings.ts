/**
 * Settings of one session — a client's, as it would have them on a backend of its own, or a
 * backend's, as the proxy left it — kept so that the difference can be applied when a client gets
 * a backend (see client-state.ts). Two kinds, because Postgres tells them apart:
 *
 * - **Reported** settings (`TimeZone`, `application_name`, `DateStyle`…, GUC_REPORT: the ones a
 *   login announces with ParameterStatus) are known by value: Postgres reports every change
 *   (at the ReadyForQuery after it, a rolled-back one included), so a backend's values are always
 *   known, and a client's are what it was told.
 * - **Other** settings (`search_path`, `statement_timeout`, `app.x`…) are known by what set them:
 *   a `SettingValue` is the SQL that sets the value (the client's own `SET` statement, or a
 *   `set_config` call), and two sessions have the same value when they hold the same object. A
 *   change inside a transaction block is kept apart until the block commits or rolls back.
 */
import { quoteIdent } from '../policy/names.js';

/** The SQL that gives a setting its value; compared by identity. */
export interface SettingValue {
  readonly sql: string;
  /** The value itself, when known (a value given by set_config, not by the client's own SET text). */
  readonly value?: string;
}

/**
 * A string literal that reads the same whatever standard_conforming_strings the backend has when
 * it reads it: with a backslash, an escape string (E'…'), which both readings take alike.
 */
export function literal(text: string): string {
  const quoted = text.replace(/'/g, "''");
  return text.includes('\\') ? `E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/** One object per (name, value): sessions given the same value by different routes hold the same object. */
const values = new Map<string, SettingValue>();

/** The value `set_config(name, value, false)` gives. */
export function setConfigValue(name: string, value: string): SettingValue {
  const key = `${name}\0${value}`;
  let v = values.get(key);
  if (v === undefined) {
    if (values.size >= 10_000) values.clear();
    values.set(key, (v = { sql: `SELECT pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`, value }));
  }
  return v;
}

/** Reported settings a session can change itself (the others only say what the server is). */
const FIXED_REPORTED = new Set(['server_version', 'server_encoding', 'integer_datetimes', 'is_superuser', 'session_authorization', 'in_hot_standby']);

/** Whether `name`, as a ParameterStatus says it, is fixed (answers kept per name: a login reports a few dozen). */
const fixedByName = new Map<string, boolean>();

function isFixedReported(name: string): boolean {
  let fixed = fixedByName.get(name);
  if (fixed === undefined) {
    if (fixedByName.size >= 1_000) fixedByName.clear();
    fixedByName.set(name, (fixed = FIXED_REPORTED.has(name.toLowerCase())));
  }
  return fixed;
}

/** A session whose settings `settingsId` names; `settingsMemo` is its own to keep. */
export interface SettingsHolder {
  readonly reported: ReadonlyMap<string, string>;
  readonly other: OtherSettings;
  readonly reportedStamp: number;
  settingsMemo: { stamp: number; id: number } | undefined;
}

/** Grows with every change of the session's settings (either kind). */
export function settingsStamp(h: Pick<SettingsHolder, 'other' | 'reportedStamp'>): number {
  return h.other.stamp + h.reportedStamp;
}

/** A number per set of settings seen: changeable reported values and other settings' values (by identity). */
const settingsIds = new Map<string, number>();
let nextSettingsId = 1;
/** A number per SettingValue object, which is what other settings are compared by. */
const valueIds = new WeakMap<SettingValue, number>();
let nextValueId = 1;

/**
 * A number that two sessions share when their settings are the same: no `settingsDiff` between
 * them. Remembered per session until its settings change, so that clients of the same settings
 * taking each other's backends (many clients on few backends) compare two numbers per
 * transaction. Different numbers may still have no difference worth a statement (a setting only
 * one side reports): `settingsDiff` says.
 */
export function settingsId(h: SettingsHolder): number {
  const stamp = settingsStamp(h);
  const memo = h.settingsMemo;
  if (memo !== undefined && memo.stamp === stamp) return memo.id;
  const parts: string[] = [];
  for (const [name, value] of h.reported) if (!isFixedReported(name)) parts.push(`r ${name}=${value}`);
  for (const name of h.other.names()) {
    const value = h.other.get(name);
    if (value === undefined) continue;
    let vid = valueIds.get(value);
    if (vid === undefined) valueIds.set(value, (vid = nextValueId++));
    parts.push(`o ${name}=${vid}`);
  }
  const signature = parts.sort().join('\0');
  let id = settingsIds.get(signature);
  if (id === undefined) {
    if (settingsIds.size >= 10_000) settingsIds.clear(); // ids are never given twice: a session remembering a dropped one just compares again
    settingsIds.set(signature, (id = nextSettingsId++));
  }
  h.settingsMemo = { stamp, id };
  return id;
}

/** The other settings of one session, with the changes of an open transaction kept apart. */
export class OtherSettings {
  private readonly base: Map<string, SettingValue>;
  private readonly defaults: Map<string, SettingValue>;
  /** Changes in the open transaction; `null` = back to the default (no value of its own). */
  private tx: Map<string, SettingValue | null> | undefined;
  /** Bumped on every change: sessions compare stamps to skip comparing settings. */
  stamp = 0;

  /** @param defaults what RESET returns to: a client's start-up settings; none for a backend */
  constructor(defaults: ReadonlyMap<string, SettingValue> = new Map()) {
    this.defaults = new Map(defaults);
    this.base = new Map(defaults);
  }

  /** A setting the session has had since its start, as if given at start-up (kept unless set already). */
  addDefault(name: string, value: SettingValue): void {
    this.defaults.set(name, value);
    if (this.base.has(name) || this.tx?.has(name)) return;
    this.base.set(name, value);
    this.stamp++;
  }

  /** A default given, changed or taken away while the session runs (undefined: none), its value with it. */
  replaceDefault(name: string, value: SettingValue | undefined): void {
    this.tx?.delete(name);
    if (value === undefined) {
      this.defaults.delete(name);
      this.base.delete(name);
    } else {
      this.defaults.set(name, value);
      this.base.set(name, value);
    }
    this.stamp++;
  }

  get(name: string): SettingValue | undefined {
    if (this.tx?.has(name)) return this.tx.get(name) ?? undefined;
    return this.base.get(name);
  }

  /** What RESET returns `name` to (undefined: the server's own default). */
  defaultOf(name: string): SettingValue | undefined {
    return this.defaults.get(name);
  }

  /** Every setting with a value of the session's own at its start. */
  defaultNames(): Iterable<string> {
    return this.defaults.keys();
  }

  /** Every name with a value, or with a change in the open transaction. */
  names(): Iterable<string> {
    return this.tx === undefined ? this.base.keys() : new Set([...this.base.keys(), ...this.tx.keys()]);
  }

  set(name: string, value: SettingValue): void {
    (this.tx ??= new Map()).set(name, value);
    this.stamp++;
  }

  /** RESET name: back to the session's default. */
  reset(name: string): void {
    (this.tx ??= new Map()).set(name, this.defaults.get(name) ?? null);
    this.stamp++;
  }

  resetAll(): void {
    for (const name of [...this.names()]) this.reset(name);
    for (const name of this.defaults.keys()) this.reset(name);
  }

  /** Whether a change waits for its transaction's end. */
  get pending(): boolean {
    return this.tx !== undefined;
  }

  commit(): void {
    if (this.tx === undefined) return;
    for (const [name, value] of this.tx) {
      if (value === null) this.base.delete(name);
      else this.base.set(name, value);
    }
    this.tx = undefined;
    this.stamp++;
  }

  rollback(): void {
    if (this.tx === undefined) return;
    this.tx = undefined;
    this.stamp++;
  }

  /** Forgets everything but the defaults (a backend after DISCARD ALL). */
  clear(): void {
    this.tx = undefined;
    this.base.clear();
    for (const [name, value] of this.defaults) this.base.set(name, value);
    this.stamp++;
  }
}

/** Whether `name` is a reported setting a session can change (a ParameterStatus of the login names it). */
export function isChangeableReported(name: string, reported: ReadonlyMap<string, string>): boolean {
  return reported.has(name) && !isFixedReported(name);
}

/** Settings as a client expects them and as a backend has them: what must change, and the SQL that does it. */
export interface SettingsDiff {
  sql: string;
  /** The settings it sets or resets. */
  names: readonly string[];
  /** Sets the backend's other settings to the client's (the reported ones are told by Postgres itself). */
  apply(): void;
}

/**
 * The SQL that gives a backend the client's settings, or undefined when they already agree.
 * `clientReported` / `backendReported` are keyed by the names Postgres reports (`TimeZone`).
 */
export function settingsDiff(
  client: { reported: ReadonlyMap<string, string>; other: OtherSettings },
  backend: { reported: ReadonlyMap<string, string>; other: OtherSettings },
): SettingsDiff | undefined {
  const statements: string[] = [];
  const calls: string[] = [];
  for (const [name, value] of client.reported) {
    if (isFixedReported(name) || backend.reported.get(name) === value) continue;
    calls.push(`pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`);
  }
  const changes: [string, SettingValue | undefined][] = [];
  const names = new Set([...client.other.names(), ...backend.other.names()]);
  for (const name of names) {
    const wanted = client.other.get(name);
    if (wanted === backend.other.get(name)) continue;
    changes.push([name, wanted]);
    statements.push(wanted === undefined ? `RESET ${quoteIdent(name)}` : wanted.sql);
  }
  if (calls.length === 0 && statements.length === 0) return undefined;
  if (calls.length > 0) statements.unshift(`SELECT ${calls.join(', ')}`);
  return {
    // One statement per line: a statement ending in a line comment cannot swallow the next.
    sql: statements.join('\n;\n'),
    names: changes.map(([name]) => name),
    apply: () => {
      for (const [name, value] of changes) {
        if (value === undefined) backend.other.reset(name);
        else backend.other.set(name, value);
      }
    },
  };
}
