// The policy's public contract: what the front ends and the control plane pass in and get back.
import type { Edit } from './splices.js';
import type { PgError } from '../shared/errors.js';

/** How a principal may use one repo. */
export type RepoAccess = 'own' | 'write' | 'read';

/** What one principal may do, built by the control plane. */
export interface Rights {
  /** Service user = Postgres role name, e.g. `alice`. */
  user: string;
  /** Schema name (`bob/data`) → access; public repos appear as `read`. */
  repos: ReadonlyMap<string, RepoAccess>;
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
  | { kind: 'reset'; name: string }
  | { kind: 'reset_all' }
  | { kind: 'discard'; what: 'all' | 'temp' | 'plans' | 'sequences' }
  /** SQL PREPARE (its text `start`–`end`); `inner`: the effects of running the prepared query. */
  | { kind: 'prepare'; name: string; start: number; end: number; inner: SessionEffect[] }
  /** EXECUTE name (also inside EXPLAIN or CREATE TABLE AS): runs a prepared statement. */
  | { kind: 'execute'; name: string }
  /** DEALLOCATE name, or DEALLOCATE ALL (`null`). */
  | { kind: 'deallocate'; name: string | null }
  /** Creates an object in the session's temporary schema. */
  | { kind: 'temp' }
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
  /** pg_backend_pid(): reads the client's process id, a setting the front end carries (backend-pid.ts). */
  | { kind: 'backend_pid' }
  /** An unqualified function call: session state only if it is not a built-in of the server. */
  | { kind: 'call'; name: string }
  /** Code out of the policy's sight: a user function, DO, CALL, set_config of a name not given as a constant. */
  | { kind: 'unknown' }
  /** Custom settings (`app.tenant`) a function body or DO block names: code that may set them later. */
  | { kind: 'names'; names: string[] };

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
  /** Stops the parse worker, if one was started. */
  close(): Promise<void>;
}
