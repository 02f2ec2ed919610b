/**
 * RESET ALL, RESET name, SET name TO DEFAULT and DISCARD ALL return settings to their values at
 * the session's start: the client's start-up parameters (the repo of its database name, `options`,
 * application_name…). A pooled backend started with none of them, so Postgres returns it to its
 * own. Between requests the proxy gives the backend the client's settings again (pooling.ts); for
 * the statements after such a reset in the same query string, it puts a statement of its own right
 * after the reset that gives them back, whose answers the client does not see (a hidden step).
 */
import { HIDDEN_SETTING, type SessionEffect } from '../policy/index.js';
import type { BackendState } from './backend-state.js';
import type { ClientState } from './client-state.js';
import { isChangeableReported, literal } from './session-settings.js';

/** A statement of the proxy's to put into the query string right after the reset at `end` (of the text as the client sent it). */
export interface Restore {
  /** The index of the reset's statement in the string: the hidden step comes after it. */
  statement: number;
  end: number;
  sql: string;
  /** What it sets, as effects (the backend holds those values after it: its bookkeeping follows). */
  effects: SessionEffect[];
}

/** The restores a query string needs (none when no reset is followed by another statement). */
export function restoresAfterResets(effects: readonly (readonly SessionEffect[])[] | undefined, client: ClientState, backend: BackendState): Restore[] | undefined {
  if (effects === undefined) return undefined;
  let out: Restore[] | undefined;
  for (let i = 0; i < effects.length - 1; i++) {
    for (const e of effects[i]!) {
      const all = e.kind === 'reset_all' || (e.kind === 'discard' && e.what === 'all');
      if (!all && e.kind !== 'reset') continue;
      const sets = all ? everything(client, backend) : one(e.kind === 'reset' ? e.name : '', client, backend);
      if (sets.length === 0) continue;
      // Other settings the client has from its start are noted as the backend's again (reported ones Postgres reports itself).
      const effects = sets.filter(([name]) => client.other.defaultOf(name) !== undefined).map(([name, value]): SessionEffect => ({ kind: 'set', name, value }));
      (out ??= []).push({ statement: i, end: e.end, sql: `SELECT ${sets.map(([name, value]) => call(name, value)).join(', ')}`, effects });
    }
  }
  return out;
}

const call = (name: string, value: string) => `pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`;

/** Every start-up value of the client's that a reset on the backend would not return to, and what the proxy keeps there. */
function everything(client: ClientState, backend: BackendState): [string, string][] {
  const sets: [string, string][] = [];
  for (const [name, value] of client.startupReported) {
    if (isChangeableReported(name, client.startupReported) && backend.login.get(name) !== value) sets.push([name, value]);
  }
  for (const name of client.other.defaultNames()) {
    const value = client.other.defaultOf(name)?.value;
    if (value !== undefined) sets.push([name, value]);
  }
  if (backend.hiddenTold) sets.push([HIDDEN_SETTING, backend.hiddenTold]);
  for (const [name, value] of backend.requestSettings ?? []) sets.push([name, value]);
  return sets;
}

/** The start-up value of one setting, if the client has one of its own. */
function one(name: string, client: ClientState, backend: BackendState): [string, string][] {
  for (const [reported, value] of client.startupReported) {
    if (reported.toLowerCase() === name) return isChangeableReported(reported, client.startupReported) && backend.login.get(reported) !== value ? [[reported, value]] : [];
  }
  const value = client.other.defaultOf(name)?.value;
  return value === undefined ? [] : [[name, value]];
}
