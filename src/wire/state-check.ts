/**
 * The check: asking a backend what session state it holds, after code the proxy could not see
 * into ran there (a user's function, DO, CALL) or to learn whether a pin is over — its
 * session-level settings, temporary objects, advisory locks, channels and held cursors.
 */
import { SENDERS_PREFIX } from '../policy/index.js';

/** What a backend holds that the proxy may not have seen made (see `checkSql`). */
export interface CheckResult {
  /** Session-level settings (pg_settings' source `session`, and custom ones with a value): name → value. */
  settings: ReadonlyMap<string, string>;
  /** Custom settings (of the names asked for) that exist in the session, empty ones too. */
  present: ReadonlySet<string>;
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
 * Settings of one transaction (SET TRANSACTION, BEGIN ISOLATION LEVEL): Postgres shows them with
 * source `session` after a transaction that set them, but they are not the session's — each
 * transaction starts from the defaults — and cannot be set or reset outside a transaction.
 */
const TRANSACTION_SETTINGS = "'transaction_isolation', 'transaction_read_only', 'transaction_deferrable'";

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
    `(SELECT coalesce(json_object_agg(name, setting), '{}') FROM pg_catalog.pg_settings WHERE source = 'session' AND name NOT IN (${TRANSACTION_SETTINGS}))::text,`,
    'EXISTS (SELECT FROM pg_catalog.pg_class WHERE relnamespace = pg_catalog.pg_my_temp_schema()),',
    "EXISTS (SELECT FROM pg_catalog.pg_locks WHERE pid = pg_catalog.pg_backend_pid() AND locktype = 'advisory'),",
    `EXISTS (SELECT FROM pg_catalog.pg_listening_channels() c WHERE NOT pg_catalog.starts_with(c, '${SENDERS_PREFIX}')),`,
    'EXISTS (SELECT FROM pg_catalog.pg_cursors WHERE is_holdable),',
    // Custom settings that exist (empty ones too: set once, a name stays in the session).
    names.length === 0 ? "'{}'" : `(SELECT coalesce(json_object_agg(n, v), '{}') FROM (SELECT n, pg_catalog.current_setting(n, true) AS v FROM pg_catalog.unnest(ARRAY[${names.join(', ')}]::text[]) n) s WHERE v IS NOT NULL)::text`,
  ].join(' ');
}

/** The check's one row, as its text columns. */
export function parseCheck(row: readonly (string | null)[]): CheckResult {
  const custom = Object.entries(JSON.parse(row[5] ?? '{}') as Record<string, string>);
  const named = [...Object.entries(JSON.parse(row[0] ?? '{}') as Record<string, string>), ...custom.filter(([, value]) => value !== '')];
  const settings = new Map(named.map(([name, value]) => [name.toLowerCase(), value]));
  const present = new Set(custom.map(([name]) => name.toLowerCase()));
  return { settings, present, temp: row[1] === 't', locks: row[2] === 't', listens: row[3] === 't', cursors: row[4] === 't' };
}
