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
