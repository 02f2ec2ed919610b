/**
 * Pooling by transaction, the relay's side: which backend serves the client's next request,
 * what is sent ahead of the request so that the backend holds the client's session state
 * (pooling-ahead.ts), what each statement that succeeds changes (client-state.ts), and when the
 * backend goes back to the pool — at the ReadyForQuery 'I' that ends a transaction, unless the
 * client is pinned to it, after asking the backend what it holds when code the proxy could not
 * see into may have left something there (pooling-handover.ts).
 *
 * What is sent ahead goes in the same write as the client's message, and its answers are the
 * proxy's (`Internal` entries of the relay's queue): the client sees only its own.
 */
import type { SessionEffect } from '../policy/index.js';
import type { PgError } from '../shared/errors.js';
import { FrontendCode, buildParameterStatus, decodeParameterStatus, type TransactionStatus } from '../protocol/index.js';
import type { Return } from '../upstream/session-pool.js';
import type { SessionDone, UpstreamSession } from '../upstream/session.js';
import { BackendState } from './backend-state.js';
import type { ClientState } from './client-state.js';
import { hiddenShow } from './custom-settings.js';
import { PreparedStatements, type Sent } from './prepared.js';
import type { Internal, Pending, Step } from './requests.js';
import { Senders } from './notifications.js';
import { AheadOfRequests, type AheadDeps } from './pooling-ahead.js';
import { afterTransaction, returnHow, type HandOverDeps } from './pooling-handover.js';

// The relay imports these from here.

/** Backends' states, whoever holds them (a backend outlives the clients it serves). */
const backends = new WeakMap<UpstreamSession, BackendState>();

export function backendState(session: UpstreamSession): BackendState {
  let state = backends.get(session);
  if (state === undefined) backends.set(session, (state = new BackendState(session.parameters, session.processId)));
  return state;
}

export interface PoolingDeps extends AheadDeps, HandOverDeps {
  /** Idle backend of the client's role at once (`prefer` if it is idle), or none. */
  takeIdle(prefer: UpstreamSession | undefined): UpstreamSession | undefined;
  /** A backend of the client's role, once there is one (53300 past the pool timeout); `done` may be called at once. */
  acquire(prefer: UpstreamSession | undefined, done: SessionDone): void;
  release(session: UpstreamSession, how: Return): void;
  /** Pools the backend while the client keeps it until another request takes it (`revoke`); false: release it instead. */
  lend(session: UpstreamSession, revoke: () => void): boolean;
  /** Takes a lent backend back; false when another request took it. */
  reclaim(session: UpstreamSession): boolean;
}

export class Pooling {
  readonly statements: PreparedStatements;
  /** The backend the client used last: it gets that one back when it is idle. */
  last: UpstreamSession | undefined;
  private knownSenders: Senders | undefined;
  /** What the portals bound in the batch being sent run (their statements' effects). */
  private readonly portals = new Map<string, Step | undefined>();
  /** What the client's requests need sent ahead of them. */
  private readonly ahead: AheadOfRequests;

  constructor(
    readonly client: ClientState,
    private readonly deps: PoolingDeps,
  ) {
    this.statements = new PreparedStatements(client);
    this.ahead = new AheadOfRequests(client, deps, this.statements);
  }

  /** Who sent the notifications the client gets, once it has its process id. */
  get senders(): Senders | undefined {
    const pid = this.client.processId;
    return pid === undefined ? undefined : (this.knownSenders ??= new Senders(this.deps.sendersChannel, pid));
  }

  takeIdle(): UpstreamSession | undefined {
    return this.deps.takeIdle(this.last);
  }

  acquire(done: SessionDone): void {
    this.deps.acquire(this.last, done);
  }

  lend(session: UpstreamSession, revoke: () => void): boolean {
    return this.deps.lend(session, revoke);
  }

  reclaim(session: UpstreamSession): boolean {
    return this.deps.reclaim(session);
  }

  /**
   * Bind, Describe, Execute or Close of an extended batch on `backend`: what to send for it (the
   * statements it names mapped to the backend's, prepared again where it lacks them), or
   * undefined to send it as it came. An Execute notes in `batch` what its portal's statement does.
   */
  batchMessage(backend: BackendState, code: number, frame: Buffer, batch: Pending): readonly Sent[] | undefined {
    if (code === FrontendCode.Execute) {
      (batch.steps ??= []).push(this.portals.size === 0 ? undefined : this.portals.get(portalName(frame)));
      return undefined;
    }
    if (code === FrontendCode.Close) return this.statements.close(backend, frame);
    if (code !== FrontendCode.Bind && code !== FrontendCode.Describe) return undefined;
    const used = this.statements.use(backend, code, frame);
    if (code === FrontendCode.Bind) {
      const effects = used.statement?.effects;
      if (effects !== undefined && effects.length > 0) this.portals.set(portalName(frame), { effects, text: used.statement!.text });
      else if (this.portals.size > 0) this.portals.delete(portalName(frame));
    }
    return used.sent;
  }

  /** The extended batch ended (its Sync): its portals are gone. */
  batchEnded(): void {
    if (this.portals.size > 0) this.portals.clear();
  }

  /** The client now holds `session`. */
  attached(session: UpstreamSession): BackendState {
    const backend = backendState(session);
    this.last = session;
    return backend;
  }

  /** The proxy's requests to send ahead of the client's next one (AheadOfRequests.before). */
  before(backend: BackendState, status: TransactionStatus, effects: readonly (readonly SessionEffect[])[] | undefined, query: boolean, queryText?: string): Internal[] {
    return this.ahead.before(backend, status, effects, query, queryText);
  }

  /** The first SHOW of a custom setting the client never set (custom-settings.ts): refused as Postgres would. */
  hiddenShow(backend: BackendState, effects: readonly (readonly SessionEffect[])[] | undefined): { error: PgError; start: number; end: number } | undefined {
    return hiddenShow(effects, this.client.defined, backend);
  }

  /** A statement (or Execute) of the client succeeded. */
  stepDone(backend: BackendState, step: Step | undefined): void {
    if (step !== undefined && step.effects.length > 0) this.client.applyEffects(step.effects, step.text, backend, this.deps.builtins);
  }

  /**
   * A CommandComplete of the client's (bytes `start` to `end` of `buf`): COMMIT and ROLLBACK end
   * the transaction whose setting changes were kept apart (a ROLLBACK TO a savepoint is left to
   * the check, see client-state.ts).
   */
  commandTag(backend: BackendState, buf: Buffer, start: number, end: number, step: Step | undefined): void {
    if (!this.client.awaitsTransactionEnd(backend)) return;
    const tag = buf.toString('latin1', start + 5, Math.min(end - 1, start + 25));
    if (tag === 'COMMIT' || tag === 'PREPARE TRANSACTION') this.client.endTransaction(true, backend);
    else if (tag === 'ROLLBACK' && !step?.effects.some((e) => e.kind === 'savepoint')) this.client.endTransaction(false, backend);
  }

  /** A request of the client's ended (its ReadyForQuery): an implicit transaction ends with it. */
  requestDone(backend: BackendState, status: TransactionStatus, failed: boolean): Buffer[] | undefined {
    if (status === 'I') this.client.endTransaction(!failed, backend);
    const { resetTo } = this.client;
    if (resetTo.size === 0) return undefined;
    // A reported setting reset to the client's start-up value that the backend already had (its
    // own default): Postgres reports no change, but the client's view changed, as a ParameterStatus says.
    let told: Buffer[] | undefined;
    if (!failed) for (const [name, value] of resetTo) if (this.client.reportedValue(name, value) !== undefined) (told ??= []).push(buildParameterStatus(name, value));
    resetTo.clear(); // clearing allocates a new table, even an empty one's: not for every request
    return told;
  }

  /**
   * A ParameterStatus of the backend: noted as the backend's, and, during a request of the
   * client's, the frame to pass on when the client's view changed (its own ParameterStatus).
   */
  parameterStatus(backend: BackendState, frame: Buffer, forClient: boolean): Buffer | undefined {
    const { name, value } = decodeParameterStatus(frame);
    if (backend.reported.get(name) !== value) {
      backend.reported.set(name, value);
      backend.reportedStamp++;
    }
    if (!forClient) return undefined;
    const told = this.client.reportedValue(name, value);
    if (told === undefined) return undefined;
    return told === value ? frame : buildParameterStatus(name, told);
  }

  /**
   * The transaction is over and nothing is in flight: the check to run first, or whether the
   * backend goes back to the pool (pooling-handover.ts).
   */
  afterTransaction(backend: BackendState): Internal | 'release' | 'keep' {
    return afterTransaction(this.client, this.deps, backend);
  }

  /** How a backend goes back when the client leaves (pooling-handover.ts). */
  returnHow(backend: BackendState, clean: boolean, unread = false): Return {
    return returnHow(this.client, backend, clean, unread);
  }
}

/** The portal a Bind or Execute names (its first field). */
function portalName(frame: Buffer): string {
  return frame.toString('utf8', 5, frame.indexOf(0, 5));
}
