/**
 * Custom settings (`app.tenant`) as a session of one's own has them. Postgres keeps a custom
 * setting's name for the rest of a session once anything set it — SET, SET LOCAL, set_config,
 * even in a transaction that rolled back — and RESET leaves it there, empty: in a session where it
 * was never set, `SHOW app.tenant` is an error (42704) and `current_setting('app.tenant', true)`
 * NULL. A pooled backend keeps the names every client of the role set there. So the proxy notes
 * which names each client defined, and which each backend holds; `SHOW` of a name the client never
 * set is refused as Postgres would, and `current_setting` goes to a stand-in that reads the names
 * to leave out from a setting (src/policy/session-stand-ins.ts). The service's own settings
 * (`repobase.…`) are never the client's.
 */
import { HIDDEN_SETTING, type SessionEffect } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { BackendState } from './backend-state.js';
import { literal } from './session-settings.js';
import { quoteIdent } from '../policy/names.js';

/** Whether a setting's name is a custom one: Postgres makes it exist by setting it. */
export function isCustom(name: string): boolean {
  return name.includes('.');
}

function hidden(name: string, defined: ReadonlySet<string>, backend: BackendState): boolean {
  return name.startsWith('repobase.') || (backend.placeholders.has(name) && !defined.has(name));
}

/**
 * What goes ahead of a request that reads custom settings on `backend`: the names the client set
 * (elsewhere) made to exist there too — RESET makes a custom setting exist, empty; the ones it
 * has a value for the settings it is given set (`valued`) — and the SQL that tells the stand-in
 * which names the client never set, when that changed since it was last told there.
 */
export function customSettingsSql(defined: ReadonlySet<string>, valued: (name: string) => boolean, backend: BackendState): string[] {
  const sql: string[] = [];
  for (const name of defined) {
    if (backend.placeholders.has(name) || valued(name)) continue;
    sql.push(`RESET ${quoteIdent(name)}`);
    backend.placeholders.add(name);
  }
  const hidden = hiddenSettingsSql(defined, backend);
  if (hidden !== undefined) sql.push(hidden);
  return sql;
}

function hiddenSettingsSql(defined: ReadonlySet<string>, backend: BackendState): string | undefined {
  let list = '';
  for (const name of [...backend.placeholders].sort()) if (!defined.has(name) && !name.startsWith('repobase.')) list += list === '' ? name : `,${name}`;
  if (list === (backend.hiddenTold ?? '')) return undefined;
  backend.hiddenTold = list;
  return `SELECT pg_catalog.set_config('${HIDDEN_SETTING}', ${literal(list)}, false)`;
}

/** Whether statements with these effects read custom settings. */
export function readsCustom(effects: readonly (readonly SessionEffect[])[]): boolean {
  for (const list of effects) for (const e of list) if (e.kind === 'reads_custom' || e.kind === 'show') return true;
  return false;
}

/** The first SHOW of a custom setting the client never set, with Postgres' error for it and where its statement lies. */
export function hiddenShow(effects: readonly (readonly SessionEffect[])[] | undefined, defined: ReadonlySet<string>, backend: BackendState): { error: PgError; start: number; end: number } | undefined {
  if (effects === undefined) return undefined;
  for (const list of effects) {
    for (const e of list) {
      if (e.kind === 'show' && hidden(e.name, defined, backend)) return { error: new PgError(SqlState.UndefinedObject, `unrecognized configuration parameter "${e.name}"`), start: e.start, end: e.end };
    }
  }
  return undefined;
}
