/**
 * Pooling by transaction, the relay's side: which backend serves the client's next request,
 * what is sent ahead of the request so that the backend holds the client's session state
 * (settings, prepared statements), what each statement that succeeds changes (client-state.ts),
 * and when the backend goes back to the pool — at the ReadyForQuery 'I' that ends a transaction,
 * unless the client is pinned to it, after asking the backend what it holds when code the proxy
 * could not see into may have left something there.
 *
 * What is sent ahead goes in the same write as the client's message, and its answers are the
 * proxy's (`Internal` entries of the relay's queue): the client sees only its own.
 */
import { ACTIVITY_SETTING, STATEMENTS_SETTING, type SessionEffect } from '../policy/index.js';
import type { Activities } from './activity.js';
import type { PgError } from '../shared/errors.js';
import { FrontendCode, buildParameterStatus, buildQuery, decodeParameterStatus, inClientText, type TransactionStatus } from '../protocol/index.js';
import type { Return } from '../upstream/session-pool.js';
import type { UpstreamSession } from '../upstream/session.js';
import { sequenceCaptures, settingReplays, stateChecks } from '../observe/metrics.js';
import { BackendState, NO_CLIENT } from './backend-state.js';
import type { ClientState, BuiltinFunctions } from './client-state.js';
import type { Prepared } from './prepared-statement.js';
import { checkSql, parseCheck } from './state-check.js';
import { captureSql, parseCapture, type SequenceFreeTables } from './sequences.js';
import { customSettingsSql, hiddenShow, isCustom, readsCustom } from './custom-settings.js';
import { PreparedStatements, type Sent } from './prepared.js';
import type { Pending } from './answers.js';
import { literal, settingsDiff, settingsId, settingsStamp } from './session-settings.js';
import { announcement, Senders } from './notifications.js';
import { quoteIdent } from '../policy/names.js';
import { TextOf } from './reading.js';

/** What one statement (a Query's) or one Execute (a batch's) does to the session, and the text its effects point into. */
export interface Step {
  effects: readonly SessionEffect[];
  text: string | undefined;
  /** A statement of the proxy's in the client's string (reset-restore.ts): its answers are not the client's. */
  hidden?: true;
}


/** A request of the proxy's own on the backend: its frames are written, its answers end at its ReadyForQuery. */
export interface Internal {
  frames: Buffer[];
  /** Each row it returns (the check). */
  onRow?(row: (string | null)[]): void;
  /** At its ReadyForQuery: `error` is the first error it got, if any. */
  done(error: Buffer | undefined, status: TransactionStatus): void;
  /** Its error, if it fails, is the one the client's next request answers with in place of its own first error. */
  substitute?: boolean;
}

/** Backends' states, whoever holds them (a backend outlives the clients it serves). */
const backends = new WeakMap<UpstreamSession, BackendState>();

export function backendState(session: UpstreamSession): BackendState {
  let state = backends.get(session);
  if (state === undefined) backends.set(session, (state = new BackendState(session.parameters, session.processId)));
  return state;
}

/** Server statements a backend may hold before it is reset when given back. */
const MAX_STATEMENTS_PER_BACKEND = 500;

const DISCARD_SEQUENCES = 'DISCARD SEQUENCES';

export interface PoolingDeps {
  /** Idle backend of the client's role at once (`prefer` if it is idle), or none. */
  takeIdle(prefer: UpstreamSession | undefined): UpstreamSession | undefined;
  /** A backend of the client's role, once there is one (53300 past the pool timeout). */
  acquire(prefer: UpstreamSession | undefined): Promise<UpstreamSession>;
  release(session: UpstreamSession, how: Return): void;
  /** Pools the backend while the client keeps it until another request takes it (`revoke`); false: release it instead. */
  lend(session: UpstreamSession, revoke: () => void): boolean;
  /** Takes a lent backend back; false when another request took it. */
  reclaim(session: UpstreamSession): boolean;
  builtins: BuiltinFunctions;
  /** The text to prepare a SQL PREPARE again from, as the policy lets it through now (undefined: refused). */
  prepareText(p: Prepared): string | undefined;
  /** Told that a backend could not be brought to the client's state (with the error Postgres gave). */
  onRestoreFailed(error: Buffer): void;
  /** Told that what a backend holds of the client's session could not be learnt: the session cannot go on safely. */
  onLost(message: string): void;
  /** The user's channel of sender announcements (notifications.ts). */
  sendersChannel: string;
  /** The client's role, and the tables known to take no default from a sequence (sequences.ts). */
  role: string;
  sequenceFree: SequenceFreeTables;
  /** The wire clients of this process, as pg_stat_activity shows them (activity.ts). */
  activities: Activities;
}

export class Pooling {
  readonly statements: PreparedStatements;
  /** The backend the client used last: it gets that one back when it is idle. */
  last: UpstreamSession | undefined;
  private knownSenders: Senders | undefined;
  /** The text of the client's encoding, which what the proxy sends ahead is written in. */
  private readonly texts = new TextOf();
  /** What the portals bound in the batch being sent run (their statements' effects). */
  private readonly portals = new Map<string, Step | undefined>();

  constructor(
    readonly client: ClientState,
    private readonly deps: PoolingDeps,
  ) {
    this.statements = new PreparedStatements(client);
  }

  /** Who sent the notifications the client gets, once it has its process id. */
  get senders(): Senders | undefined {
    const pid = this.client.processId;
    return pid === undefined ? undefined : (this.knownSenders ??= new Senders(this.deps.sendersChannel, pid));
  }

  takeIdle(): UpstreamSession | undefined {
    return this.deps.takeIdle(this.last);
  }

  acquire(): Promise<UpstreamSession> {
    return this.deps.acquire(this.last);
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

  /**
   * The proxy's requests to send ahead of the client's next one: the settings the backend lacks,
   * the prepared statements a Query names by EXECUTE/PREPARE/DEALLOCATE, and a DISCARD SEQUENCES
   * before a read of another client's sequence state. Nothing while a transaction has failed
   * (Postgres would refuse it; the transaction's end comes first). `effects`: those of the
   * Query's statements, or of the statement that begins an extended batch.
   */
  before(backend: BackendState, status: TransactionStatus, effects: readonly (readonly SessionEffect[])[] | undefined, query: boolean, queryText?: string): Internal[] {
    if (status === 'E') return [];
    if (hasEffect(effects, 'backend_pid')) this.client.usesBackendPid();
    const jobs: Internal[] = [];
    const text = this.texts.of(this.client.reported.get('client_encoding'));
    // Nothing changed on either side since they were last made the same (the client's next
    // transaction on its own backend), or the backend was left with the same settings by another
    // client: no setting to compare.
    const synced = this.inSync(backend) || this.sameSettings(backend);
    // The reading settings first, on their own: Postgres reads a whole Query with the ones it has
    // when it gets it, so everything after (the settings, statements prepared again, the client's
    // own messages) is read as the client writes it.
    const reading = synced ? undefined : readingDiff(this.client.reported, backend.reported);
    if (reading !== undefined) jobs.push(this.restore(reading, status, () => undefined));
    const diff = synced ? undefined : settingsDiff(this.client, backend);
    if (diff !== undefined) {
      settingReplays.value++;
      jobs.push(
        this.restore(
          diff.sql,
          status,
          (after) => {
            diff.apply();
            for (const name of diff.names) if (isCustom(name)) backend.placeholders.add(name);
            if (after === 'I') backend.other.commit();
            this.markSynced(backend);
          },
          text,
        ),
      );
    } else if (!synced) {
      this.markSynced(backend);
    }
    const sql: string[] = [];
    let parses: Buffer[] = [];
    const undo: (() => void)[] = [];
    if (effects !== undefined) {
      const made = this.statements.beforeQuery(backend, effects, (p) => this.deps.prepareText(p));
      sql.push(...made.sql);
      parses = made.frames;
      if (made.undo !== undefined) undo.push(made.undo);
      if (this.touchesSequences(effects) && this.clearsSequences(backend)) sql.push(DISCARD_SEQUENCES);
      if (readsCustom(effects)) sql.push(...customSettingsSql(this.client.defined, (name) => this.client.other.get(name) !== undefined, backend));
      // The user's sessions and the session's prepared statements, as the stand-ins show them
      // (also given back after a RESET ALL in the request's string: reset-restore.ts).
      backend.requestSettings = undefined;
      if (hasSessionsRead(effects, 'activity')) {
        const json = this.deps.activities.json(this.deps.role);
        sql.push(setConfig(ACTIVITY_SETTING, json));
        (backend.requestSettings ??= []).push([ACTIVITY_SETTING, json]);
      }
      if (hasSessionsRead(effects, 'statements')) {
        const listed = this.statements.listed(backend, (p) => this.deps.prepareText(p), effects, queryText);
        sql.push(...listed.sql, setConfig(STATEMENTS_SETTING, listed.json));
        (backend.requestSettings ??= []).push([STATEMENTS_SETTING, listed.json]);
        parses = [...parses, ...listed.frames];
        if (listed.undo !== undefined) undo.push(listed.undo);
      }
      // Notifications: a listener hears who sent what; a sender says whom its backend serves.
      const channel = this.deps.sendersChannel;
      if (hasEffect(effects, 'listen')) sql.push(`LISTEN ${quoteIdent(channel)}`);
      // Before every request that notifies, not only when the backend served another client: a
      // client that started listening since has not heard the earlier announcement.
      const pid = this.client.processId;
      if (pid !== undefined && hasEffect(effects, 'notify')) {
        sql.push(announce(channel, backend.processId, pid));
        this.announced(backend, pid, status);
      }
    }
    if (backend.serving !== undefined && backend.serving !== this.client.processId) {
      // It was said to serve another client: what this one sends (a trigger's notification) is not that one's.
      sql.unshift(announce(this.deps.sendersChannel, backend.processId, 0));
      this.announced(backend, undefined, status);
    }
    if (sql.length > 0) {
      // A Query drops the unnamed statement (as the client's own would: then only for the client).
      if (!query) backend.unnamed = undefined;
      else this.client.unnamed = backend.unnamed = undefined;
      // A statement prepared again that fails (its table was dropped) fails the client's own
      // statement that needs it, with that error: as it would on a backend of its own.
      jobs.push({
        frames: [inClientText(buildQuery(sql.join('\n;\n')), text)],
        substitute: true,
        done: (error) => {
          if (error !== undefined) for (const u of undo) u();
        },
      });
    }
    if (parses.length > 0) jobs.push({ frames: parses.map((f) => inClientText(f, text)), done: () => undefined });
    return jobs;
  }

  /**
   * A request of the proxy's that gives the backend the client's settings. Outside a transaction
   * it runs in a transaction block of its own: should it fail, the block stays open and failed, so
   * that the client's request sent behind it cannot run on a backend that lacks its settings (the
   * relay then closes the backend and answers that request with the error: onRestoreFailed).
   */
  private restore(sql: string, status: TransactionStatus, applied: (after: TransactionStatus) => void, text = this.texts.of(this.client.reported.get('client_encoding'))): Internal {
    const guarded = status === 'I' ? `BEGIN\n;\n${sql}\n;\nCOMMIT` : sql;
    return {
      frames: [inClientText(buildQuery(guarded), text)],
      done: (error, after) => {
        if (error !== undefined) return this.deps.onRestoreFailed(error);
        applied(after);
      },
    };
  }

  /**
   * Notes whom the backend was announced as serving (undefined: no client). Inside the client's
   * transaction the announcement is part of it: until that transaction ends, it is pending.
   */
  private announced(backend: BackendState, pid: number | undefined, status: TransactionStatus): void {
    if (status === 'I') backend.announced = pid;
    else backend.announcing = pid ?? NO_CLIENT;
  }

  /** The first SHOW of a custom setting the client never set (custom-settings.ts): refused as Postgres would. */
  hiddenShow(backend: BackendState, effects: readonly (readonly SessionEffect[])[] | undefined): { error: PgError; start: number; end: number } | undefined {
    return hiddenShow(effects, this.client.defined, backend);
  }

  /** Whether statements with these effects read or make sequence state (code out of sight may). */
  private touchesSequences(effects: readonly (readonly SessionEffect[])[]): boolean {
    for (const list of effects) {
      for (const e of list) {
        if (e.kind === 'sequence' || e.kind === 'sequence_write' || e.kind === 'unknown' || (e.kind === 'call' && !this.deps.builtins.has(e.name))) return true;
      }
    }
    return false;
  }

  /**
   * The client is about to read or make sequence state on `backend`: whether the backend's must be
   * cleared first — another client's, or an older one of this client's (it has used sequences on
   * another backend since). Its values from before are the ones it carries (sequences.ts).
   */
  private clearsSequences(backend: BackendState): boolean {
    const client = this.client;
    if (backend.sequenceHolder === client.id && client.sequenceBackend === backend) return false;
    const foreign = backend.sequenceHolder !== undefined;
    backend.sequenceHolder = client.id;
    client.sequenceBackend = backend;
    return foreign;
  }

  /** Whether the backend's settings are the client's, as last compared (nothing changed on either side since). */
  private inSync(backend: BackendState): boolean {
    const s = backend.synced;
    const c = this.client;
    return s !== undefined && s.client === c.id && s.clientStamp === settingsStamp(c) && s.backendStamp === settingsStamp(backend);
  }

  /** Whether the backend has the client's settings (another client with the same left it): then marked in sync. */
  private sameSettings(backend: BackendState): boolean {
    if (settingsId(this.client) !== settingsId(backend)) return false;
    this.markSynced(backend);
    return true;
  }

  /** Notes the backend in sync with the client as both are now (in place: many clients on few backends do it every transaction). */
  private markSynced(backend: BackendState): void {
    const c = this.client;
    const s = (backend.synced ??= { client: 0, clientStamp: 0, backendStamp: 0 });
    s.client = c.id;
    s.clientStamp = settingsStamp(c);
    s.backendStamp = settingsStamp(backend);
  }

  /** A statement (or Execute) of the client succeeded. */
  stepDone(backend: BackendState, step: Step | undefined): void {
    if (step !== undefined && step.effects.length > 0) this.client.applyEffects(step.effects, step.text, backend, this.deps.builtins);
  }

  /**
   * A CommandComplete of the client's: COMMIT and ROLLBACK end the transaction whose setting
   * changes were kept apart (a ROLLBACK TO a savepoint is left to the check, see client-state.ts).
   */
  commandTag(backend: BackendState, frame: Buffer, step: Step | undefined): void {
    if (!this.client.awaitsTransactionEnd(backend)) return;
    const tag = frame.toString('latin1', 5, Math.min(frame.length - 1, 25));
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
   * The transaction is over and nothing is in flight: the check to run first (code out of the
   * proxy's sight ran), or whether the backend goes back to the pool.
   */
  afterTransaction(backend: BackendState): Internal | 'release' | 'keep' {
    const client = this.client;
    if (client.needsCheck) {
      stateChecks.value++;
      backend.unnamed = undefined; // a Query drops the unnamed statement: the client's is made again if it binds it
      let row: (string | null)[] | undefined;
      return {
        frames: [buildQuery(checkSql())],
        onRow: (r) => (row = r),
        done: (error) => {
          if (error !== undefined || row === undefined) return this.deps.onLost(`asking a pooled backend for the session's state failed${error ? `: ${errorText(error)}` : ''}`);
          client.applyCheck(parseCheck(row), backend);
        },
      };
    }
    const capture = this.capture(backend);
    if (capture !== undefined) return capture;
    return client.pinned ? 'keep' : 'release';
  }

  /** After a transaction that may have made sequence state: the query that captures it (sequences.ts), if any is left to ask. */
  private capture(backend: BackendState): Internal | undefined {
    const client = this.client;
    const writes = client.sequenceWrites;
    if (writes === undefined) return undefined;
    client.sequenceWrites = undefined;
    const scope = `${this.deps.role}\0${client.other.get('search_path')?.sql ?? ''}`;
    const q = captureSql(writes, (table) => this.deps.sequenceFree.has(scope, table));
    if (q === undefined) return undefined;
    sequenceCaptures.value++;
    backend.unnamed = undefined; // a Query drops the unnamed statement
    let row: (string | null)[] | undefined;
    return {
      frames: [buildQuery(q.sql)],
      onRow: (r) => (row = r),
      done: (error) => {
        if (error !== undefined || row === undefined) return; // not captured: currval reads the backend's own, as before
        const { state, free } = parseCapture(row);
        client.capturedSequences(state, backend);
        if (free.length > 0) this.deps.sequenceFree.add(scope, free);
      },
    };
  }

  /**
   * How a backend goes back when the client leaves (`clean`: nothing in flight, no transaction
   * open). `unread`: answers were drained unread (settled): what they changed on the backend
   * (settings, statements) is not known, so it is reset.
   */
  returnHow(backend: BackendState, clean: boolean, unread = false): Return {
    if (!clean) return 'close';
    if (unread || this.client.pinned || backend.statementCount > MAX_STATEMENTS_PER_BACKEND) {
      backend.reset();
      return 'reset';
    }
    return 'keep';
  }
}

/** Whether a statement of these reads the user's sessions or the session's statements (`what`). */
function hasSessionsRead(effects: readonly (readonly SessionEffect[])[], what: 'activity' | 'statements'): boolean {
  for (const list of effects) for (const e of list) if (e.kind === 'reads_sessions' && e.what === what) return true;
  return false;
}

const setConfig = (name: string, value: string) => `SELECT pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`;

/** Whether a statement of these does something of `kind` (no closures: this runs before every request). */
function hasEffect(effects: readonly (readonly SessionEffect[])[] | undefined, kind: SessionEffect['kind']): boolean {
  if (effects === undefined) return false;
  for (const list of effects) for (const e of list) if (e.kind === kind) return true;
  return false;
}

/** The SQL that tells the user's listeners which client `backend` serves (0: none that notifies). */
function announce(channel: string, backend: number, client: number): string {
  return `SELECT pg_catalog.pg_notify(${literal(channel)}, ${literal(announcement(backend, client))})`;
}

/** The portal a Bind or Execute names (its first field). */
function portalName(frame: Buffer): string {
  return frame.toString('utf8', 5, frame.indexOf(0, 5));
}

function errorText(frame: Buffer): string {
  const m = /M([^\0]*)\0/.exec(frame.toString('utf8', 5));
  return m?.[1] ?? 'an error';
}

/** The settings that decide how Postgres reads text. */
const READING = ['client_encoding', 'standard_conforming_strings'] as const;

/** SQL (ASCII) that gives the backend the client's reading settings, or undefined when it has them. */
function readingDiff(client: ReadonlyMap<string, string>, backend: ReadonlyMap<string, string>): string | undefined {
  let calls: string[] | undefined;
  for (const name of READING) {
    const value = client.get(name);
    if (value !== undefined && value !== backend.get(name)) (calls ??= []).push(`pg_catalog.set_config('${name}', ${literal(value)}, false)`);
  }
  return calls === undefined ? undefined : `SELECT ${calls.join(', ')}`;
}
