/**
 * How Postgres reads a client's statements: its client_encoding and standard_conforming_strings.
 * The relay decodes each statement with the client's encoding to judge it (and passes the setting
 * of standard_conforming_strings to the policy), and holds a statement back while one that may
 * change them is in flight (see docs/encodings.md).
 */
import { misread, type Decision, type Session, type SessionEffect } from '../policy/index.js';
import { UTF8_TEXT, clientText, type ClientText } from '../protocol/index.js';
import { PgError, SqlState } from '../shared/errors.js';

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

/**
 * An encoding the proxy cannot decode exactly (EUC_TW, JOHAB, MULE_INTERNAL…): read byte for
 * byte, so that a statement beyond ASCII is refused as such (`misread`), not as invalid text.
 */
export const UNREADABLE: ClientText = { ...clientText('LATIN1')!, encoding: 'UNREADABLE' };

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

/**
 * One client's reading settings as the relay follows them: the text its statements are decoded
 * with, the session the policy judges them in, and whether a statement must wait for a request in
 * flight that may change them.
 */
export class ClientReading {
  private readonly texts = new TextOf();
  /** A request that may change the reading settings is in flight. */
  private inFlight = false;
  /** The extended batch that surely changes them, while it lasts. */
  private changingBatch: object | undefined;

  constructor(
    /** The settings the client's next statement is read with (see Relay). */
    private readonly settings: () => ReadonlyMap<string, string> | undefined,
  ) {}

  /** The client's text: its client_encoding (see TextOf). */
  text(): ClientText {
    return this.texts.of(this.settings()?.get('client_encoding'));
  }

  /** The refusal of `sql` when the client's encoding cannot be decoded exactly (see the policy's `misread`). */
  misread(sql: string): Decision | undefined {
    const settings = this.settings();
    return settings !== undefined && this.text() === UNREADABLE ? misread(sql, settings) : undefined;
  }

  /** `session` as the policy reads the next statement in: with standard_conforming_strings off, '…' strings as Postgres reads them so. */
  session(session: Session): Session {
    return this.settings()?.get('standard_conforming_strings') === 'off' ? { ...session, standardConformingStrings: false } : session;
  }

  /** A request with these effects was sent; `batch`: the extended batch it is part of. */
  sent(effects: Extract<Decision, { kind: 'allow' }>['effects'], batch?: object): void {
    const change = mayChangeReading(effects);
    if (change !== false) this.inFlight = true;
    // Inside a batch only a change it surely makes refuses what follows (code out of sight
    // rarely changes the reading, and batches of function calls are common).
    if (change === 'surely' && batch !== undefined) this.changingBatch = batch;
  }

  /** The extended batch ended (its Sync). */
  batchEnded(): void {
    this.changingBatch = undefined;
  }

  /**
   * Whether a message that carries a statement must wait: a request in flight (`owed` answers
   * are) may change how Postgres reads it, so it is read once that one is answered. Inside the
   * extended batch that made the change, waiting would wait for ever (nothing is answered before
   * Sync): the statement is refused instead.
   */
  check(batch: object | undefined, owed: number): 'wait' | 'go' | PgError {
    if (this.changingBatch !== undefined && this.changingBatch === batch) {
      return new PgError(SqlState.FeatureNotSupported, 'a statement after one that changes client_encoding or standard_conforming_strings must come after its Sync', {
        hint: 'send Sync after the statement that changes the setting, then the next one',
      });
    }
    if (!this.inFlight) return 'go';
    if (owed > 0) return 'wait';
    this.inFlight = false;
    return 'go';
  }
}
