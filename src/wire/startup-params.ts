/**
 * What a client's StartupMessage asks for, turned into the upstream session's start-up
 * parameters: settings pass through (they become the session's defaults, restored by
 * DISCARD ALL), `options` is unpacked into settings, and what would change identity, or a
 * client_encoding the proxy cannot decode exactly, is refused.
 */
import { quoteIdent, splitIdentifiers } from '../policy/names.js';
import { citusSettingRefusal } from '../policy/citus.js';
import { PgError, SqlState } from '../shared/errors.js';

const IDENTITY = new Set(['role', 'session_authorization', 'is_superuser']);

/** Splits a libpq `options` string: space-separated, backslash escapes a character. */
function splitOptions(options: string): string[] {
  const words: string[] = [];
  let word = '';
  let escaped = false;
  for (const ch of options) {
    if (escaped) {
      word += ch;
      escaped = false;
    } else if (ch === '\\') {
      escaped = true;
    } else if (ch === ' ' || ch === '\t') {
      if (word) words.push(word);
      word = '';
    } else {
      word += ch;
    }
  }
  if (word) words.push(word);
  return words;
}

function optionSettings(options: string): [string, string][] {
  const words = splitOptions(options);
  const settings: [string, string][] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const setting = w === '-c' ? words[++i] : w.startsWith('--') ? w.slice(2) : w.startsWith('-c') ? w.slice(2) : undefined;
    const eq = setting?.indexOf('=') ?? -1;
    if (!setting || eq <= 0) {
      throw new PgError(SqlState.ProtocolViolation, `invalid command-line argument in options: "${w}"`, {
        severity: 'FATAL',
        hint: 'options may only hold settings: -c name=value',
      });
    }
    settings.push([setting.slice(0, eq).replace(/-/g, '_'), setting.slice(eq + 1)]);
  }
  return settings;
}

export interface UpstreamStartup {
  /** Settings for the upstream StartupMessage (without user and database). */
  params: Record<string, string>;
  /** The session's search path, for the policy. */
  searchPath: string[];
}

/**
 * @param repoPath the search path implied by the database name (`alice/sales`), if any
 */
export function upstreamStartup(client: Readonly<Record<string, string>>, repoPath: string[] | undefined): UpstreamStartup {
  const params: Record<string, string> = {};
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    if (IDENTITY.has(key)) {
      throw new PgError(SqlState.InsufficientPrivilege, `setting "${name}" at start-up is not allowed`, {
        severity: 'FATAL',
        hint: 'each API key connects as its own user; remove it from the connection options',
      });
    }
    const citus = citusSettingRefusal(key);
    if (citus) throw new PgError(citus.code, citus.message, { severity: 'FATAL', hint: 'remove it from the connection options' });
    params[name] = value;
  };
  for (const [name, value] of Object.entries(client)) {
    if (name === 'user' || name === 'database' || name === 'options' || name.startsWith('_pq_.')) continue;
    if (name === 'replication') {
      throw new PgError(SqlState.InsufficientPrivilege, 'replication connections are not supported', { severity: 'FATAL' });
    }
    add(name, value);
  }
  if (client.options) for (const [name, value] of optionSettings(client.options)) add(name, value);
  if (repoPath && params.search_path === undefined) params.search_path = repoPath.map(quoteIdent).join(', ');
  const searchPath = params.search_path !== undefined ? splitIdentifiers(params.search_path, ',') : ['$user', 'public'];
  if (searchPath === undefined) {
    throw new PgError(SqlState.InvalidParameterValue, 'invalid value for parameter "search_path": invalid list syntax', { severity: 'FATAL' });
  }
  return { params, searchPath };
}
