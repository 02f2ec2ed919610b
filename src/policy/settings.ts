// Settings that decide how Postgres reads statement text.
import { clientText } from '../shared/client-encoding.js';
import type { Refusal } from './facts.js';
import { refusals } from './refusals.js';

/**
 * Why Postgres may read `sql` differently from the policy's parser with the reading settings at
 * `reading` (as the server last reported them: a function can change them with `set_config`, out
 * of the policy's sight), or undefined when it reads the same: in pure ASCII, every client
 * encoding Postgres supports reads the same characters.
 */
export function misreadRefusal(sql: string, reading: ReadonlyMap<string, string>): Refusal | undefined {
  const encoding = reading.get('client_encoding');
  if (encoding === undefined || clientText(encoding) !== undefined || isAscii(sql)) return undefined;
  return refusals.changedReading('client_encoding', encoding);
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}
