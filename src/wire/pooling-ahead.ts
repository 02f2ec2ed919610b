/**
 * Pooling by transaction, what goes ahead of a client's request on the backend serving it: the
 * settings the backend lacks, the statements it must prepare again, and what the stand-ins, the
 * sequences and the notifications need — the proxy's own requests (`Internal`), written in the
 * same write as the client's message.
 */
import { ACTIVITY_SETTING, STATEMENTS_SETTING, type SessionEffect } from '../policy/index.js';
import type { Activities } from './activity.js';
import { buildQuery, inClientText, type TransactionStatus } from '../protocol/index.js';
import { settingReplays } from '../observe/metrics.js';
import { NO_CLIENT, type BackendState } from './backend-state.js';
import type { ClientState, BuiltinFunctions } from './client-state.js';
import type { Prepared } from './prepared-statement.js';
import { customSettingsSql, isCustom, readsCustom } from './custom-settings.js';
import type { PreparedStatements } from './prepared.js';
import { noEffects, type Internal } from './requests.js';
import { literal, settingsDiff, settingsId, settingsStamp } from './session-settings.js';
import { announcement } from './notifications.js';
import { quoteIdent } from '../policy/names.js';
import { TextOf } from './reading.js';

const DISCARD_SEQUENCES = 'DISCARD SEQUENCES';

/** What going ahead of a request needs of the connection. */
export interface AheadDeps {
  builtins: BuiltinFunctions;
  /** The text to prepare a SQL PREPARE again from, as the policy lets it through now (undefined: refused). */
  prepareText(p: Prepared): string | undefined;
  /** Told that a backend could not be brought to the client's state (with the error Postgres gave). */
  onRestoreFailed(error: Buffer): void;
  /** The user's channel of sender announcements (notifications.ts). */
  sendersChannel: string;
  /** The client's role. */
  role: string;
  /** The wire clients of this process, as pg_stat_activity shows them (activity.ts). */
  activities: Activities;
}

/** One per pooled client: what its requests need sent ahead of them. */
export class AheadOfRequests {
  /** The text of the client's encoding, which what the proxy sends ahead is written in. */
  private readonly texts = new TextOf();

  constructor(
    private readonly client: ClientState,
    private readonly deps: AheadDeps,
    private readonly statements: PreparedStatements,
  ) {}

  /**
   * The proxy's requests to send ahead of the client's next one: the settings the backend lacks,
   * the prepared statements a Query names by EXECUTE/PREPARE/DEALLOCATE, and a DISCARD SEQUENCES
   * before a read of another client's sequence state. Nothing while a transaction has failed
   * (Postgres would refuse it; the transaction's end comes first). `effects`: those of the
   * Query's statements, or of the statement that begins an extended batch.
   */
  before(backend: BackendState, status: TransactionStatus, effects: readonly (readonly SessionEffect[])[] | undefined, query: boolean, queryText?: string): Internal[] {
    if (status === 'E') return NOTHING;
    if (hasEffect(effects, 'backend_pid')) this.client.usesBackendPid(); // changes the client's settings: before they are compared
    // Nothing changed on either side since they were last made the same (the client's next
    // transaction on its own backend), or the backend was left with the same settings by another
    // client: no setting to compare.
    const synced = this.inSync(backend) || this.sameSettings(backend);
    // The hot path (a client's next plain statement on a backend in step with it): nothing to
    // send, nothing allocated.
    if (synced && noEffects(effects) && (backend.serving === undefined || backend.serving === this.client.processId)) {
      if (effects !== undefined) backend.requestSettings = undefined;
      return NOTHING;
    }
    let jobs: Internal[] | undefined;
    const text = this.texts.of(this.client.reported.get('client_encoding'));
    // The reading settings first, on their own: Postgres reads a whole Query with the ones it has
    // when it gets it, so everything after (the settings, statements prepared again, the client's
    // own messages) is read as the client writes it.
    const reading = synced ? undefined : readingDiff(this.client.reported, backend.reported);
    if (reading !== undefined) (jobs ??= []).push(this.restore(reading, status, () => undefined));
    const diff = synced ? undefined : settingsDiff(this.client, backend);
    if (diff !== undefined) {
      settingReplays.value++;
      (jobs ??= []).push(
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
    // Made only when something is sent: a write to a table (which carries a sequence effect) mostly sends nothing.
    let sql: string[] | undefined;
    let parses: readonly Buffer[] = NO_FRAMES;
    let undo: (() => void)[] | undefined;
    if (effects !== undefined) {
      const made = this.statements.beforeQuery(backend, effects, this.prepareText);
      if (made !== undefined) {
        sql = made.sql;
        parses = made.frames;
        if (made.undo !== undefined) (undo ??= []).push(made.undo);
      }
      if (this.touchesSequences(effects) && this.clearsSequences(backend)) (sql ??= []).push(DISCARD_SEQUENCES);
      if (readsCustom(effects)) (sql ??= []).push(...customSettingsSql(this.client.defined, (name) => this.client.other.get(name) !== undefined, backend));
      // The user's sessions and the session's prepared statements, as the stand-ins show them
      // (also given back after a RESET ALL in the request's string: reset-restore.ts).
      backend.requestSettings = undefined;
      if (hasSessionsRead(effects, 'activity')) {
        const json = this.deps.activities.json(this.deps.role);
        (sql ??= []).push(setConfig(ACTIVITY_SETTING, json));
        (backend.requestSettings ??= []).push([ACTIVITY_SETTING, json]);
      }
      if (hasSessionsRead(effects, 'statements')) {
        const listed = this.statements.listed(backend, this.prepareText, effects, queryText);
        (sql ??= []).push(...listed.sql, setConfig(STATEMENTS_SETTING, listed.json));
        (backend.requestSettings ??= []).push([STATEMENTS_SETTING, listed.json]);
        parses = [...parses, ...listed.frames];
        if (listed.undo !== undefined) (undo ??= []).push(listed.undo);
      }
      // Notifications: a listener hears who sent what; a sender says whom its backend serves.
      const channel = this.deps.sendersChannel;
      if (hasEffect(effects, 'listen')) (sql ??= []).push(`LISTEN ${quoteIdent(channel)}`);
      // Before every request that notifies, not only when the backend served another client: a
      // client that started listening since has not heard the earlier announcement.
      const pid = this.client.processId;
      if (pid !== undefined && hasEffect(effects, 'notify')) {
        (sql ??= []).push(announce(channel, backend.processId, pid));
        this.announced(backend, pid, status);
      }
    }
    if (backend.serving !== undefined && backend.serving !== this.client.processId) {
      // It was said to serve another client: what this one sends (a trigger's notification) is not that one's.
      (sql ??= []).unshift(announce(this.deps.sendersChannel, backend.processId, 0));
      this.announced(backend, undefined, status);
    }
    if (sql !== undefined && sql.length > 0) {
      // A Query drops the unnamed statement (as the client's own would: then only for the client).
      if (!query) backend.unnamed = undefined;
      else this.client.unnamed = backend.unnamed = undefined;
      // A statement prepared again that fails (its table was dropped) fails the client's own
      // statement that needs it, with that error: as it would on a backend of its own.
      (jobs ??= []).push({
        frames: [inClientText(buildQuery(sql.join('\n;\n')), text)],
        substitute: true,
        done: (error) => {
          if (error !== undefined && undo !== undefined) for (const u of undo) u();
        },
      });
    }
    if (parses.length > 0) (jobs ??= []).push({ frames: parses.map((f) => inClientText(f, text)), done: () => undefined });
    return jobs ?? NOTHING;
  }

  /** The text to prepare a SQL PREPARE again from (made once: a request's path makes no closure). */
  private readonly prepareText = (p: Prepared): string | undefined => this.deps.prepareText(p);

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
}

/** Whether a statement of these reads the user's sessions or the session's statements (`what`). */
function hasSessionsRead(effects: readonly (readonly SessionEffect[])[], what: 'activity' | 'statements'): boolean {
  for (const list of effects) for (const e of list) if (e.kind === 'reads_sessions' && e.what === what) return true;
  return false;
}

const setConfig = (name: string, value: string) => `SELECT pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`;

/** What goes ahead of a request that needs nothing sent first, and no frames (shared: never changed). */
const NOTHING: Internal[] = [];
const NO_FRAMES: readonly Buffer[] = [];

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
