// The policy's public contract: what the front ends and the control plane pass in and get back.
import type { Edit } from './splices.js';
import type { PgError } from '../shared/errors.js';

/** How a principal may use one repo. */
export type RepoAccess = 'own' | 'write' | 'read';

/**
 * The limits of a scoped API key (one that is not `full`), on top of `Rights.repos`, which is
 * already cut to its scope (see key-scope.ts).
 */
export interface KeyRights {
  /** Its public id and its name, for messages. */
  id: string;
  name: string;
  access: 'read' | 'write';
  /** The repos it lists; null: every repo of its user. */
  repos: readonly string[] | null;
  /** What its user reaches with a full key: a refusal there names the key's scope as the reason. */
  reach: ReadonlyMap<string, RepoAccess>;
  /** Whether Postgres lets it change structure (the service's event triggers are installed). */
  ddl: boolean;
}

/** What one principal may do, built by the control plane. */
export interface Rights {
  /** Service user = Postgres role name, e.g. `alice`. */
  user: string;
  /** Schema name (`bob/data`) → access; public repos appear as `read`. */
  repos: ReadonlyMap<string, RepoAccess>;
  /** The repos of `repos` that are there only because they are public (not the user's, not shared). */
  publicRepos?: ReadonlySet<string>;
  /** Set for a scoped key: its limits. */
  key?: KeyRights;
  /**
   * Users who keep more than their storage quota, by name: statements that would add to the data
   * in their repos are refused with 53100 (reading, DELETE, TRUNCATE and DROP go on). The same
   * map for every user, its figures refreshed in place; a user crossing the line makes new
   * rights snapshots (control/quota.ts).
   */
  full?: ReadonlyMap<string, StorageUse>;
}

/** Bytes a user keeps in their repos, and their quota. */
export interface StorageUse {
  used: number;
  allowed: number;
}

/** The connection state the policy needs; maintained by the front end from `SessionChange`s. */
export interface Session {
  /** Schema names, already unquoted, e.g. `['alice/sales', 'public']`; `$user` may appear. */
  searchPath: readonly string[];
  /**
   * What `RESET search_path` (or `DISCARD ALL`, `SET search_path TO DEFAULT`) returns to: the
   * connection's start-up value. Defaults to Postgres' own default, `"$user", public`.
   */
  defaultSearchPath?: readonly string[];
  /**
   * `standard_conforming_strings` as the server last reported it for the session (default on):
   * off, a backslash in '…' is an escape, and statements are judged as Postgres reads them so.
   */
  standardConformingStrings?: boolean;
}

/** A change of session state that the front end applies once the statement succeeded. */
export type SessionChange =
  /** SET search_path (`local`: SET LOCAL, until the transaction ends). */
  | { kind: 'search_path'; value: readonly string[]; local?: true }
  | { kind: 'reset_search_path'; local?: true }
  /** COMMIT (or END, PREPARE TRANSACTION) or ROLLBACK: a SET LOCAL ends, a rolled-back SET is undone. */
  | { kind: 'transaction_end'; commit: boolean };

/**
 * What one statement does to its session beyond its transaction, for a front end that pools
 * backends by transaction (see session-effects.ts). Applied once the statement succeeded.
 */
export type SessionEffect =
  /** SET name …: replayed as the statement's own text, `start`–`end` of the query string. */
  | { kind: 'set_text'; name: string; start: number; end: number }
  /** set_config(name, value, false) with constant arguments, or SET SESSION CHARACTERISTICS. */
  | { kind: 'set'; name: string; value: string }
  /** A session setting whose value is known only to the server (set_config with a parameter). */
  | { kind: 'set_unknown'; name: string }
  /** RESET name (also SET name TO DEFAULT), RESET ALL, DISCARD …: `end` is where the statement ends in the query string. */
  | { kind: 'reset'; name: string; end: number }
  | { kind: 'reset_all'; end: number }
  | { kind: 'discard'; what: 'all' | 'temp' | 'plans' | 'sequences'; end: number }
  /** SQL PREPARE (its text `start`–`end`); `inner`: the effects of running the prepared query. */
  | { kind: 'prepare'; name: string; start: number; end: number; inner: SessionEffect[] }
  /** EXECUTE name (also inside EXPLAIN or CREATE TABLE AS): runs a prepared statement. */
  | { kind: 'execute'; name: string }
  /** DEALLOCATE name, or DEALLOCATE ALL (`null`). */
  | { kind: 'deallocate'; name: string | null }
  /** Creates an object in the session's temporary schema; `drop`: drops objects, maybe the last temporary one. */
  | { kind: 'temp' }
  | { kind: 'drop' }
  /** Changes what names mean (CREATE, ALTER, RENAME…): statements prepared before may plan on what it changed. */
  | { kind: 'ddl' }
  /** Takes a session-level advisory lock (`surely`: not a `try` that may take none); `unlock` releases one (others may remain), `unlock_all` all. */
  | { kind: 'lock'; surely: boolean }
  | { kind: 'unlock' }
  | { kind: 'unlock_all' }
  | { kind: 'listen' }
  /** NOTIFY, pg_notify(): sends a notification (its listeners are told which client sent it). */
  | { kind: 'notify' }
  | { kind: 'unlisten'; all: boolean }
  | { kind: 'hold_cursor'; name: string }
  /** CLOSE name, or CLOSE ALL (`null`). */
  | { kind: 'close_cursor'; name: string | null }
  /** SAVEPOINT / RELEASE, or ROLLBACK TO (`rollback`). */
  | { kind: 'savepoint'; rollback: boolean }
  /** currval / lastval: read what nextval last returned in this session. */
  | { kind: 'sequence' }
  /**
   * What may make a session's currval/lastval: nextval or setval of a sequence named as written
   * (`sequence`; undefined: not a constant), or rows written to a table whose defaults may call
   * nextval (INSERT, COPY FROM, MERGE, UPDATE … SET c = DEFAULT), its name as written (`table`).
   */
  | { kind: 'sequence_write'; sequence?: string; table?: string }
  /** pg_backend_pid(): reads the client's process id, a setting the front end carries (backend-pid.ts). */
  | { kind: 'backend_pid' }
  /** An unqualified function call: session state only if it is not a built-in of the server. */
  | { kind: 'call'; name: string }
  /** Code out of the policy's sight: a user function, DO, CALL, set_config of a name not given as a constant. */
  | { kind: 'unknown' }
  /** Custom settings (`app.tenant`) a function body or DO block names, or a call passes: code that may set them; `ran`: it ran (DO, a call), not only made (CREATE FUNCTION). */
  | { kind: 'names'; names: string[]; ran: boolean }
  /** SET LOCAL or set_config(…, true) of a custom setting: it exists in the session from now on (empty once the transaction ends). */
  | { kind: 'defines'; name: string }
  /** SHOW of a custom setting (the statement starts at `start`): Postgres says 42704 in a session where it was never set. */
  | { kind: 'show'; name: string; start: number; end: number }
  /** current_setting of a custom setting, or of a name not given as a constant: answered by a stand-in (session-stand-ins.ts). */
  | { kind: 'reads_custom' }
  /** Reads pg_stat_activity (the user's sessions) or pg_prepared_statements (the session's statements): answered from what the front end gives (session-stand-ins.ts). */
  | { kind: 'reads_sessions'; what: 'activity' | 'statements' };

/** A statement the control plane performs instead of Postgres. */
export type HandledAction =
  | { kind: 'create_repo'; owner: string; repo: string; ifNotExists: boolean }
  | { kind: 'drop_repo'; owner: string; repo: string; ifExists: boolean; cascade: boolean }
  /**
   * GRANT / ALTER DEFAULT PRIVILEGES on the owner's repos, as sharing: each grantee (a user, or
   * null for PUBLIC) gets at least `level` (a collaborator's level is raised, never lowered).
   */
  | { kind: 'share'; owner: string; grants: ReadonlyArray<{ repo: string; grantee: string | null; level: 'read' | 'write' }> };

/**
 * The verdict on one query string. `statements` counts the statements the string holds (0 for an
 * empty or comment-only string); the REST API refuses more than one. `settingFree`: running it
 * cannot change a session setting (policy/setting-free.ts), so a session it ran on needs no reset
 * for its next user; absent when it may.
 */
export type Decision =
  | {
      kind: 'allow';
      changes: readonly SessionChange[];
      statements: number;
      listens?: readonly string[];
      settingFree?: true;
      /** Per statement, what it does to the session (see SessionEffect); absent when nothing. */
      effects?: readonly (readonly SessionEffect[])[];
    }
  | {
      kind: 'rewrite';
      settingFree?: true;
      sql: string;
      /** What each rewrite changed, in order: maps Postgres' error positions back (`originalPosition`). */
      edits: readonly (readonly Edit[])[];
      changes: readonly SessionChange[];
      statements: number;
      /**
       * Channels the string LISTENs to by their "<user>/…" name: notifications on them are shown
       * by that name (others without the prefix, as the client named them: `clientChannel`).
       */
      listens?: readonly string[];
      effects?: readonly (readonly SessionEffect[])[];
    }
  | {
      kind: 'deny';
      error: PgError;
      /**
       * Where the refused statement starts, when it is not the first of the string (UTF-16
       * index): the statements before it are allowed, and Postgres would run them before it
       * reached the refused one. Absent when nothing ahead of it may run (it is the first, the
       * whole string is refused, or a statement ahead of it changes the session).
       */
      refusedAt?: number;
    }
  /** `commandTags`: one per statement of the string, as Postgres would have answered them. */
  | { kind: 'handled'; action: HandledAction; commandTags: readonly string[] };

export interface PolicyOptions {
  /** Query strings longer than this many UTF-8 bytes are refused (54000) before parsing. */
  maxStatementBytes: number;
  /** Analyses kept in the cache of recently used ones (default 5000). 0 disables the cache. */
  cacheSize?: number;
  /**
   * Query strings of at least this many bytes are parsed in a worker thread so they do not stall
   * the event loop (default 8 KiB). `Infinity` keeps everything on the calling thread.
   */
  workerThresholdBytes?: number;
}

export interface Policy {
  /**
   * Decides a whole query string (it may hold several statements). Returns the Decision itself
   * when it can be made on the calling thread (cached, or small enough to parse at once: the hot
   * path) and a Promise only when a large string is parsed in the worker thread.
   */
  decide(sql: string, rights: Rights, session: Session): Decision | Promise<Decision>;
  /**
   * A `decide` of one client's own, making the same decisions: it remembers the client's recent
   * statements decided by their shape, and recognises the next text of one of those shapes by a
   * comparison (see statement-memo.ts).
   */
  forClient(): Policy['decide'];
  /** Stops the parse worker, if one was started. */
  close(): Promise<void>;
}
