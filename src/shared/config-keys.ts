/**
 * The configuration's keys by name, without its schema: what the command line needs to accept
 * every key's flag before it knows whether the command reads the configuration (loading the
 * schema and its validator takes a client command from 0.2 to 0.6 s). `config/default.json` names
 * every key: `loadConfig` refuses any other there, and a key it lacks has no value.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './package-root.js';

const defaultFile = join(packageRoot, 'config', 'default.json');

/** The defaults, as config/default.json gives them (checked by `loadConfig`). */
export function readDefaults(): unknown {
  return JSON.parse(readFileSync(defaultFile, 'utf8'));
}

/** The keys config/default.json names. */
export function configKeyNames(): string[] {
  return Object.keys(readDefaults() as Record<string, unknown>);
}

/** `httpPort` → `REPOBASE_HTTP_PORT` */
export function envName(key: string): string {
  return 'REPOBASE_' + key.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase();
}

/** `httpPort` → `http-port` */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}
