/**
 * Pooling by transaction, a client's start-up parameters: backends log in with none (every client
 * of a role shares them), so a client's parameters are settings like any other, applied to each
 * backend that serves it (session-settings.ts). What Postgres makes of them is learnt once per
 * (role, parameters) on a real backend: the values it reports (`TimeZone=utc` is reported
 * `UTC`), which the client is greeted with, and a refusal (an unknown setting, a bad value),
 * which ends the client's start-up with Postgres' own error, as a login with them would.
 */
import { PgError } from '../shared/errors.js';
import type { SessionPool } from '../upstream/session-pool.js';
import { runOwnQuery, type UpstreamSession } from '../upstream/session.js';
import { backendState } from './pooling.js';
import { noteSettingName } from './client-state.js';
import { literal, setConfigValue, type SettingValue } from './session-settings.js';

/** The start-up parameters of every pooled backend: none. */
export const BASELINE: Readonly<Record<string, string>> = Object.freeze({});

export interface Startup {
  /** ParameterStatus values to greet the client with: the backend's login values and the client's own. */
  greeting: ReadonlyMap<string, string>;
  /** Its parameters that are not reported settings, by lower-case name: the values RESET returns to. */
  other: ReadonlyMap<string, SettingValue>;
}

export class StartupSettings {
  private readonly known = new Map<string, Promise<Startup>>();

  constructor(private readonly pool: SessionPool) {}

  /** What these parameters make of a session of `role`; rejects with Postgres' FATAL for parameters it refuses. */
  of(role: string, params: Readonly<Record<string, string>>): Promise<Startup> {
    const key = `${role}\0${JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    let startup = this.known.get(key);
    if (startup === undefined) {
      if (this.known.size >= 10_000) this.known.clear();
      startup = this.learn(role, params);
      this.known.set(key, startup);
      startup.catch(() => this.known.delete(key));
    }
    return startup;
  }

  private async learn(role: string, params: Readonly<Record<string, string>>): Promise<Startup> {
    const session = await this.pool.acquire(role, BASELINE);
    let how: 'keep' | 'close' = 'close';
    try {
      const startup = await apply(session, params);
      how = 'keep';
      return startup;
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
    const v = setConfigValue(lower, value);
    other.set(lower, v);
    backend.other.set(lower, v);
  }
  backend.other.commit();
  return { greeting, other };
}
