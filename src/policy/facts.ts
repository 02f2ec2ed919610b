// What the analysis learns from a query string. Plain data only: it is independent of who asks
// (one cache serves every user), and it crosses the worker-thread boundary by structured clone.
import type { SessionEffect } from './types.js';
import type { Edit } from './splices.js';

/** The access a reference needs: read rows, change rows, or own the repo (DDL). */
export type Need = 'read' | 'write' | 'own';

/** A refusal known without looking at anyone's rights; becomes a PgError at decision time. */
export interface Refusal {
  code: string;
  message: string;
  hint?: string;
  detail?: string;
  /** 1-based character position in the query string. */
  position?: number;
}

/**
 * A schema-qualified (or not) name the statement touches.
 * - `relation`: tables, views, sequences; unqualified ones resolve through search_path, with
 *   pg_catalog's own relation names known.
 * - `object`: functions, types, operators, collations…; unqualified ones are checked only when
 *   created or changed (lookups of built-ins are Postgres' business).
 * - `schema`: a schema named on its own (`COMMENT ON SCHEMA`, `SET SCHEMA`, `REINDEX SCHEMA`).
 */
export interface NameRef {
  kind: 'relation' | 'object' | 'schema';
  schema: string | null;
  name: string;
  need: Need;
  /** Names an object being created: an unqualified name goes to the creation schema. */
  create: boolean;
  /** A temporary relation being created (`CREATE TEMP TABLE`): lives in pg_temp. */
  temp: boolean;
  /** The statement it occurs in, for messages (`INSERT`, `ALTER TABLE`). */
  command: string;
  position: number | null;
  /** search_path of the function body it occurs in (`CREATE FUNCTION … SET search_path`). */
  path: string[] | null;
}

export type Setting =
  | { kind: 'search_path'; value: string[]; position: number | null; local?: true }
  | { kind: 'reset_search_path'; local?: true }
  | { kind: 'transaction_end'; commit: boolean };

export type SchemaCommand =
  | { kind: 'create'; name: string; ifNotExists: boolean; authRole: string | null }
  | { kind: 'drop'; names: string[]; ifExists: boolean; cascade: boolean };

/**
 * A reference redirected to the service's schemas (`catalog-refs.ts`, `catalog-rewrite.ts`): a read
 * of a filtered catalog relation (`pg_class`, `pg_catalog.pg_class`) or of a column named through
 * it (`pg_catalog.pg_class.relname`), a call of a function with a stand-in (`pg_get_viewdef(o)`,
 * `pg_notify`), or a cast to a reg* type (`o::regclass`, wrapped to show only visible objects).
 */
export interface CatalogRef {
  kind: 'relation' | 'column' | 'function' | 'cast' | 'alias';
  /** The parser's location (UTF-8 byte offset in the query string). */
  location: number;
  /** As written: null for an unqualified relation. */
  schema: string | null;
  name: string;
  /** The service schema holding its view or stand-in. */
  target: string;
  /**
   * A cast: where its argument's first token and its type name are (parser locations). An alias
   * (`name` kept for an output column whose cast is wrapped): the outermost cast's type name, and
   * in `argLocation` the output column's own location.
   */
  argLocation?: number;
  typeLocation?: number;
}

/** Where a LISTEN/NOTIFY/UNLISTEN statement names its channel (UTF-16 indexes in the query string). */
export interface ChannelSpan {
  from: number;
  to: number;
  name: string;
  /** A LISTEN: the front end shows notifications on it by this name. */
  listen: boolean;
}

/** A grant the control plane performs as sharing a repo (`grants.ts`). */
export interface ShareGrant {
  /** The repo's schema. */
  schema: string;
  /** A user, or null for PUBLIC (the repo becomes public). */
  grantee: string | null;
  level: 'read' | 'write';
}

export interface StatementFacts {
  /** Where the statement starts in the query string (UTF-16 index). */
  start: number;
  /** Parse node type of the statement, e.g. `SelectStmt`. */
  kind: string;
  /** Command as users name it, e.g. `SELECT`, `CREATE TABLE`. */
  command: string;
  refs: NameRef[];
  /** Every function called, as written (`count`, `pg_catalog.now`, `alice/sales.f`). */
  functions: string[];
  /** Opaque bodies found and checked, by language (`sql`, `plpgsql`; DO blocks as `do`). */
  bodies: string[];
  /** search_path changes, in order; applied after the statement. */
  settings: Setting[];
  /** search_paths given to functions (`SET search_path = …` clauses): checked like SET's. */
  functionPaths: string[][];
  /**
   * Channels named in function bodies (`pg_notify('alice/x', …)`, run later, out of reach of the
   * rewrite): they must be named "<user>/…" already.
   */
  channels: string[];
  /** Channel names of top-level LISTEN/NOTIFY/UNLISTEN: prefixed with the user at decision time. */
  channelSpans: ChannelSpan[];
  /** Catalog reads to redirect to the filtered views; the analysis' rewrite carries them out. */
  catalog: CatalogRef[];
  /** Roles named in `… OWNER TO` or `ALTER DEFAULT PRIVILEGES FOR ROLE`: only the user itself may be (checked at decision time). */
  owners: string[];
  /** GRANT / ALTER DEFAULT PRIVILEGES performed as sharing, and which of the two it is. */
  shares: ShareGrant[];
  shareCommand: string | null;
  /** The first function called that is not a built-in (a user's): a read key cannot tell whether it writes. */
  userCall: string | null;
  /** The first built-in called that writes (nextval, setval, pg_notify), for read keys. */
  writerCall: string | null;
  /** The first large-object function called: large objects belong to a user, not to a repo (scoped keys). */
  largeObjectCall: string | null;
  /** It may make the transaction read-write (SET …_read_only, BEGIN/SET TRANSACTION READ WRITE): not for read keys. */
  readWrite: boolean;
  /** The first service-rule violation found, if any. */
  refusal: Refusal | null;
  /**
   * Running it cannot change a session setting, whatever its names resolve to but unqualified
   * functions and types (judged with the search path in decide.ts); see setting-free.ts.
   */
  settingFree: boolean;
  schema: SchemaCommand | null;
}

/** The string forwarded instead of the client's, and the edits of each rewrite that made it, in order. */
export interface Rewritten {
  sql: string;
  edits: Edit[][];
}

export interface Analysis {
  /** A refusal of the whole string (syntax error, NUL byte). */
  error: Refusal | null;
  statements: StatementFacts[];
  /** The whole query string with the catalog redirects and the seed rule applied, when they changed anything. */
  rewrite: Rewritten | null;
  /** The query string, kept when it names LISTEN/NOTIFY channels: they are spliced per user. */
  channelText?: string;
  /** Per statement, what it does to the session (session-effects.ts); absent when no statement does anything. */
  effects?: SessionEffect[][];
}
