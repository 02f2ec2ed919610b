/**
 * What one upstream backend holds, as the proxy left it (pooling by transaction): its reported
 * and other settings, the server statements it holds and under which names, and who it served
 * last. A backend outlives the clients it serves; its client's side is client-state.ts.
 */
import type { Prepared } from './prepared-statement.js';
import { OtherSettings } from './session-settings.js';
import { schemaGeneration } from './schema-generation.js';

/** An announcement that a backend serves no client (process ids are never 0). */
export const NO_CLIENT = 0;

/** What one backend holds, as the proxy left it. */
export class BackendState {
  /** Reported settings as the backend last reported them (login, then each ParameterStatus). */
  readonly reported: Map<string, string>;
  readonly other = new OtherSettings();
  /** Server statement name → key of what it holds. */
  private readonly byName = new Map<string, string>();
  /** Key → a server statement name holding it. */
  private readonly byKey = new Map<string, string>();
  /** Server statement name → the schema generation it was made in. */
  private readonly made = new Map<string, number>();
  /** The client statement the backend's unnamed statement holds now. */
  unnamed: Prepared | undefined;
  /** The client whose sequence state (currval, lastval) its session holds, if any (sequences.ts). */
  sequenceHolder: number | undefined;
  /** Custom settings that exist in its session (set there by some client), and the list of those a client never set it was last told (custom-settings.ts). */
  readonly placeholders = new Set<string>();
  hiddenTold: string | undefined;
  /** Settings of the proxy's given for the request now running (what pg_stat_activity and pg_prepared_statements show it). */
  requestSettings: [string, string][] | undefined;
  /** The client it was announced as serving (notifications.ts): unsaid before another client's request. */
  announced: number | undefined;
  /** An announcement made inside the transaction now open (NO_CLIENT: of none): it holds once that transaction commits. */
  announcing: number | undefined;

  /** The client its listeners take it to serve, counting an announcement of the open transaction. */
  get serving(): number | undefined {
    const a = this.announcing;
    return a === undefined ? this.announced : a === NO_CLIENT ? undefined : a;
  }

  /** The open transaction ended: an announcement made in it holds if it committed. */
  endAnnouncing(committed: boolean): void {
    if (this.announcing === undefined) return;
    if (committed) this.announced = this.serving;
    this.announcing = undefined;
  }
  /** Bumped when `reported` changes (see AheadOfRequests.inSync). */
  reportedStamp = 0;
  /** Kept by `settingsId`. */
  settingsMemo: { stamp: number; id: number } | undefined;
  /** The client whose settings it had when last compared, and both sides' stamps then. */
  synced: { client: number; clientStamp: number; backendStamp: number } | undefined;
  private serial = 0;

  constructor(
    /** Its reported settings as it logged in: what RESET returns them to. */
    readonly login: ReadonlyMap<string, string>,
    /** Its process id (pg_backend_pid() there). */
    readonly processId = 0,
  ) {
    this.reported = new Map(login);
  }

  get statementCount(): number {
    return this.byName.size;
  }

  /** The server statement holding `key`, if the backend has one. */
  serverName(key: string): string | undefined {
    return this.byKey.get(key);
  }

  /** A name under which to prepare `key` here: the client's own when free, else one of the proxy's. */
  nameFor(clientName: string): string {
    if (!this.byName.has(clientName)) return clientName;
    let name: string;
    do name = `repobase_s${++this.serial}`;
    while (this.byName.has(name));
    return name;
  }

  /** Whether a server statement of that name exists (holding anything). */
  hasServerStatement(name: string): boolean {
    return this.byName.has(name);
  }

  keyOf(name: string): string | undefined {
    return this.byName.get(name);
  }

  /** `fresh`: the newest statement of `key` here from now on (one made since a schema change), whatever held it before. */
  noteServerStatement(name: string, key: string, fresh = false): void {
    this.forgetServerStatement(name);
    this.byName.set(name, key);
    this.made.set(name, schemaGeneration());
    if (fresh || !this.byKey.has(key)) this.byKey.set(key, name);
  }

  /** The schema generation (schema-generation.ts) a server statement was made in. */
  madeIn(name: string): number {
    return this.made.get(name) ?? 0;
  }

  forgetServerStatement(name: string): void {
    const key = this.byName.get(name);
    if (key === undefined) return;
    this.byName.delete(name);
    this.made.delete(name);
    if (this.byKey.get(key) !== name) return;
    this.byKey.delete(key);
    for (const [other, k] of this.byName) {
      if (k === key) {
        this.byKey.set(key, other);
        break;
      }
    }
  }

  forgetStatements(): void {
    this.byName.clear();
    this.byKey.clear();
    this.made.clear();
    this.unnamed = undefined;
  }

  /**
   * Before DISCARD ALL: a backend as fresh as after its login. Its reported settings are back at
   * their login values too (RESET ALL), which Postgres reports to whoever runs the DISCARD ALL
   * (the pool, not a client): they are set here, or the next client with the values the backend
   * had before would be given none of them.
   */
  reset(): void {
    this.reported.clear();
    for (const [name, value] of this.login) this.reported.set(name, value);
    this.reportedStamp++;
    this.other.clear();
    this.forgetStatements();
    this.sequenceHolder = undefined;
    this.synced = undefined;
  }
}

/** The name Postgres reports `name` under (`timezone` → `TimeZone`), if it reports it. */
export function reportedName(name: string, backend: BackendState): string | undefined {
  for (const n of backend.reported.keys()) if (n.toLowerCase() === name) return n;
  return undefined;
}

export function isReported(name: string, backend: BackendState): boolean {
  return reportedName(name, backend) !== undefined;
}
