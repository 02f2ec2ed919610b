/**
 * Pooling by transaction, a client's start-up parameters: backends log in with none (every client
 * of a role shares them), so a client's parameters are settings like any other, applied to each
 * backend that serves it (session-settings.ts). What Postgres makes of them is learnt once per
 * (role, parameters) on a real backend: the values it reports (`TimeZone=utc` is reported
 * `UTC`), which the client is greeted with, and a refusal (an unknown setting, a bad value),
 * which ends the client's start-up with Postgres' own error, as a login with them would. Values
 * Postgres takes as they are (a plain application_name, a custom setting's) are not part of what
 * is learnt.
 */
import { PgError } from '../shared/errors.js';
import type { SessionPool } from '../upstream/session-pool.js';
import type { UpstreamSession } from '../upstream/session.js';
import { runOwnQuery } from '../upstream/own-query.js';
import { backendState } from './pooling.js';
import { noteSettingName } from './state-check.js';
import { isCustom } from './custom-settings.js';
import { literal, setConfigValue, type SettingValue } from './session-settings.js';

/** The start-up parameters of every pooled backend: none. */
export const BASELINE: Readonly<Record<string, string>> = Object.freeze({});

export interface Startup {
  /** ParameterStatus values to greet the client with: the backend's login values and the client's own. */
  greeting: ReadonlyMap<string, string>;
  /** Its parameters that are not reported settings, by lower-case name: the values RESET returns to. */
  other: ReadonlyMap<string, SettingValue>;
}

/** An application_name Postgres takes as it is: printable ASCII, shorter than NAMEDATALEN. */
const PLAIN_APPLICATION_NAME = /^[\x20-\x7e]{0,63}$/;

export class StartupSettings {
  private readonly known = new Map<string, Promise<Startup>>();
  /** The prefixes of the dotted settings the server defines (its extensions'): learnt once. */
  private extensionPrefixes: Promise<ReadonlySet<string>> | undefined;

  constructor(private readonly pool: SessionPool) {}

  /**
   * What these parameters make of a session of `role`; rejects with Postgres' FATAL for
   * parameters it refuses. Learnt once per role and set of values that Postgres could judge or
   * rewrite: a plain application_name, and the value of a custom setting (`app.tenant`, any text
   * is valid: only its name is judged), are the client's own and need no backend — so a thousand
   * clients that each name themselves connect without waiting for a backend each.
   */
  async of(role: string, params: Readonly<Record<string, string>>): Promise<Startup> {
    const judged: Record<string, string> = {};
    const own: [string, string][] = [];
    let prefixes: ReadonlySet<string> | undefined;
    for (const [name, value] of Object.entries(params)) {
      const lower = name.toLowerCase();
      const dot = lower.indexOf('.');
      if (lower === 'application_name' && PLAIN_APPLICATION_NAME.test(value)) {
        own.push([name, value]);
      } else if (dot > 0 && !(prefixes ??= await this.prefixes(role)).has(lower.slice(0, dot))) {
        judged[name] = '';
        own.push([lower, value]);
      } else {
        judged[name] = value;
      }
    }
    const startup = await this.learnt(role, judged);
    if (own.length === 0) return startup;
    const greeting = new Map(startup.greeting);
    const other = new Map(startup.other);
    for (const [name, value] of own) {
      if (name.includes('.')) other.set(name, setConfigValue(name, value));
      else greeting.set('application_name', value);
    }
    return { greeting, other };
  }

  private learnt(role: string, params: Readonly<Record<string, string>>): Promise<Startup> {
    const key = `${role}\0${JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    let startup = this.known.get(key);
    if (startup === undefined) {
      if (this.known.size >= 10_000) this.known.clear();
      startup = this.onBackend(role, (session) => apply(session, params));
      this.known.set(key, startup);
      startup.catch(() => this.known.delete(key));
    }
    return startup;
  }

  private prefixes(role: string): Promise<ReadonlySet<string>> {
    this.extensionPrefixes ??= this.onBackend(role, async (session) => {
      const result = await runOwnQuery(session, "SELECT DISTINCT split_part(name, '.', 1) FROM pg_catalog.pg_settings WHERE name LIKE '%.%'");
      if (result.error !== undefined) throw new PgError(result.error.code, result.error.message);
      backendState(session).unnamed = undefined; // a Query drops the unnamed statement
      return new Set(result.rows.map((r) => r[0] ?? ''));
    });
    this.extensionPrefixes.catch(() => (this.extensionPrefixes = undefined));
    return this.extensionPrefixes;
  }

  private async onBackend<T>(role: string, work: (session: UpstreamSession) => Promise<T>): Promise<T> {
    const session = await this.pool.acquire(role, BASELINE);
    let how: 'keep' | 'close' = 'close';
    try {
      const result = await work(session);
      how = 'keep';
      return result;
    } finally {
      this.pool.release(role, BASELINE, session, how);
    }
  }
}

/** Sets `params` on a pooled backend and reads back what Postgres made of them; the backend keeps them. */
async function apply(session: UpstreamSession, params: Readonly<Record<string, string>>): Promise<Startup> {
  const backend = backendState(session);
  const reportedName = new Map([...session.parameters.keys()].map((n) => [n.toLowerCase(), n]));
  const entries = Object.entries(params);
  if (entries.length > 0) {
    const calls = entries.map(([name, value]) => `pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`);
    const result = await runOwnQuery(session, `SELECT ${calls.join(', ')}`);
    backend.unnamed = undefined; // a Query drops the unnamed statement
    if (result.error !== undefined) throw new PgError(result.error.code, result.error.message, { severity: 'FATAL', detail: result.error.detail, hint: result.error.hint });
    for (const [name, value] of result.reported) {
      if (backend.reported.get(name) === value) continue;
      backend.reported.set(name, value);
      backend.reportedStamp++;
    }
  }
  const greeting = new Map(session.parameters);
  const other = new Map<string, SettingValue>();
  for (const [name, value] of entries) {
    const reported = reportedName.get(name.toLowerCase());
    if (reported !== undefined) {
      greeting.set(reported, backend.reported.get(reported) ?? value);
      continue;
    }
    const lower = name.toLowerCase();
    noteSettingName(lower);
    if (isCustom(lower)) backend.placeholders.add(lower);
    const v = setConfigValue(lower, value);
    other.set(lower, v);
    backend.other.set(lower, v);
  }
  backend.other.commit();
  return { greeting, other };
}
