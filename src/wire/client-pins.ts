/**
 * What pins a wire client to its backend between transactions (pooling by transaction), and what
 * ends each pin: state that lives in one backend and cannot be made again on another — temporary
 * objects, session advisory locks, LISTEN, cursors WITH HOLD — and code the policy could not see
 * into, until the backend has been asked what it left (the check). The base of `ClientState`
 * (client-state.ts), which applies the other effects of the client's statements.
 */
import type { SessionEffect } from '../policy/index.js';
import type { CheckResult } from './state-check.js';

/** Why a client keeps its backend between transactions (the metrics' `reason` label). */
export type PinReason = 'session' | 'temp' | 'advisory_lock' | 'listen' | 'cursor' | 'unknown';
export const PIN_REASONS: readonly PinReason[] = ['session', 'temp', 'advisory_lock', 'listen', 'cursor', 'unknown'];

/** The effects of a statement that take a pin or may end one. */
export type PinEffect = Extract<SessionEffect, { kind: 'temp' | 'lock' | 'unlock' | 'unlock_all' | 'listen' | 'unlisten' | 'hold_cursor' | 'close_cursor' }>;

export class ClientPins {
  protected temp = false;
  private locks = false;
  private listens = false;
  private readonly cursors = new Set<string>();
  /** Set when something may have changed the session out of the proxy's sight: the backend is asked before it is let go. */
  needsCheck = false;
  /** A pin was taken in the transaction now open: if it rolls back, the check says what is left. */
  protected pinnedInTransaction = false;

  /** Session mode (`pgPoolMode` session): the client keeps its first backend for its whole session. */
  sessionMode = false;

  /** The reasons the client keeps its backend now (empty: it may be pooled). */
  pins(): PinReason[] {
    const out: PinReason[] = [];
    if (this.sessionMode) out.push('session');
    if (this.temp) out.push('temp');
    if (this.locks) out.push('advisory_lock');
    if (this.listens) out.push('listen');
    if (this.cursors.size > 0) out.push('cursor');
    if (this.needsCheck) out.push('unknown');
    return out;
  }

  get pinned(): boolean {
    return this.sessionMode || this.temp || this.locks || this.listens || this.cursors.size > 0 || this.needsCheck;
  }

  /** What the backend said it holds (see `CHECK_SQL`): the pins follow it. */
  protected checkedPins(found: CheckResult): void {
    this.temp = found.temp;
    this.locks = found.locks;
    this.listens = found.listens;
    this.cursors.clear();
    if (found.cursors) this.cursors.add(''); // held, by names the proxy may not know: the next check says when they are gone
    this.needsCheck = false;
  }

  /** A statement that takes a pin or may end one succeeded. */
  protected applyPin(e: PinEffect): void {
    switch (e.kind) {
      case 'temp':
        this.temp = this.pinnedInTransaction = true;
        return;
      case 'lock':
        if (e.surely) this.locks = this.pinnedInTransaction = true;
        else this.needsCheck = true; // a try may have taken none: the backend says
        return;
      case 'unlock':
        if (this.locks) this.needsCheck = true; // others may be held still: the backend says
        return;
      case 'unlock_all':
        this.locks = false;
        return;
      case 'listen':
        this.listens = this.pinnedInTransaction = true;
        return;
      case 'unlisten':
        if (e.all) this.listens = false;
        else if (this.listens) this.needsCheck = true;
        return;
      case 'hold_cursor':
        this.cursors.add(e.name);
        this.pinnedInTransaction = true;
        return;
      case 'close_cursor':
        if (e.name === null) this.cursors.clear();
        else this.cursors.delete(e.name);
        if (this.cursors.has('')) this.needsCheck = true; // cursors only the check knew of: it says when they are gone
        return;
      default:
        return assertNever(e);
    }
  }

  /** DISCARD TEMP drops the temporary objects; DISCARD ALL also releases the locks, stops listening and closes the cursors. */
  protected discardPins(what: Extract<SessionEffect, { kind: 'discard' }>['what']): void {
    if (what === 'temp' || what === 'all') this.temp = false;
    if (what !== 'all') return;
    this.locks = false;
    this.listens = false;
    this.cursors.clear();
  }
}

function assertNever(x: never): never {
  throw new Error(`unexpected pin effect ${JSON.stringify(x)}`);
}
