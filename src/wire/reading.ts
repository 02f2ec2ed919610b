/**
 * How Postgres reads a client's statements: its client_encoding and standard_conforming_strings.
 * The relay decodes each statement with the client's encoding to judge it (and passes the setting
 * of standard_conforming_strings to the policy), and holds a statement back while one that may
 * change them is in flight (see docs/wire.md, client encodings).
 */
import type { Decision, SessionEffect } from '../policy/index.js';
import { UTF8_TEXT, clientText, type ClientText } from '../protocol/index.js';

const READING_NAMES: ReadonlySet<string> = new Set(['client_encoding', 'standard_conforming_strings']);

/**
 * Whether statements with these effects may change how Postgres reads the client's next message:
 * `surely` for their own SET, a RESET ALL or DISCARD ALL, `perhaps` for code out of the policy's
 * sight.
 */
export function mayChangeReading(effects: Extract<Decision, { kind: 'allow' }>['effects']): 'surely' | 'perhaps' | false {
  if (effects === undefined) return false;
  let perhaps = false;
  for (const list of effects) {
    for (const e of list) {
      if (changesReading(e)) return 'surely';
      if (e.kind === 'unknown') perhaps = true;
    }
  }
  return perhaps ? 'perhaps' : false;
}

function changesReading(e: SessionEffect): boolean {
  if (e.kind === 'reset_all' || (e.kind === 'discard' && e.what === 'all')) return true;
  return (e.kind === 'set' || e.kind === 'set_text' || e.kind === 'reset' || e.kind === 'set_unknown') && READING_NAMES.has(e.name.toLowerCase());
}

/** An encoding the proxy cannot decode exactly, set by a function: read as UTF-8, and only ASCII statements pass (`misread`). */
export const UNREADABLE: ClientText = { ...UTF8_TEXT };

/** The text of a client_encoding, kept for the name last asked (it rarely changes). */
export class TextOf {
  private name: string | undefined;
  private text: ClientText = UTF8_TEXT;

  /** UTF-8 for none; UNREADABLE for one repobase cannot decode. */
  of(name: string | undefined): ClientText {
    if (name !== this.name) {
      this.name = name;
      this.text = name === undefined ? UTF8_TEXT : (clientText(name) ?? UNREADABLE);
    }
    return this.text;
  }
}
