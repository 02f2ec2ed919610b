// Settings that decide how Postgres reads statement text.
import type { Refusal } from './facts.js';
import { refusals } from './refusals.js';

const conformingOn = new Set(['on', 'true', 'yes', 't', 'y', '1']);
const readableEncodings = new Set(['utf8', 'unicode', 'sqlascii']);

/**
 * With standard_conforming_strings off, Postgres reads backslashes in '…' as escapes, and client
 * encodings such as SJIS or GBK carry ASCII bytes inside multi-byte characters: either way
 * Postgres would read a statement differently from the parser that checked it. Both stay as
 * they are (`value` undefined = back to the default, which is fine).
 */
export function readingSettingRefusal(name: string, value: string | undefined): Refusal | undefined {
  if (value === undefined) return undefined;
  const v = value.toLowerCase();
  if (name === 'standard_conforming_strings' && !conformingOn.has(v)) {
    return refusals.readingSetting(name, 'it stays on');
  }
  if (name === 'client_encoding' && !readableEncodings.has(v.replace(/[-_]/g, ''))) {
    return refusals.readingSetting(name, 'repobase speaks UTF8');
  }
  return undefined;
}

/**
 * Why Postgres may read `sql` differently from the policy's parser with the reading settings at
 * `reading` (as the server last reported them: a function can change them with `set_config`, out
 * of the policy's sight), or undefined when it reads the same: without a backslash, a string ends
 * where it does with standard_conforming_strings on; in pure ASCII, every client encoding
 * Postgres supports reads the same characters.
 */
export function misreadRefusal(sql: string, reading: ReadonlyMap<string, string>): Refusal | undefined {
  for (const [name, value] of reading) {
    if (readingSettingRefusal(name, value) === undefined) continue;
    const atRisk = name === 'standard_conforming_strings' ? sql.includes('\\') : !isAscii(sql);
    if (atRisk) return refusals.changedReading(name, value);
  }
  return undefined;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}
