// Service-rule refusals that do not depend on who asks: one message each, so a user learns what
// is not allowed and what to do instead.
import { SqlState } from '../shared/errors.js';
import type { Refusal } from './facts.js';

const denied = SqlState.InsufficientPrivilege;
const unsupported = SqlState.FeatureNotSupported;

const collaboratorHint =
  'share a repo through the API instead: PUT /api/v1beta/repos/<user>/<repo>/collaborators/<name> with {"permission":"read"} or {"permission":"write"}';

export const refusals = {
  roleGames: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: each repobase user is exactly one role`,
    hint: 'your connection already runs as your own role; repos are shared with collaborators, not roles',
  }),
  roles: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: users and roles are managed by repobase`,
    hint: 'create users with `repobase user create`; share repos with collaborators',
  }),
  grant: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: access to repos is managed by repobase`,
    hint: collaboratorHint,
  }),
  owner: {
    code: denied,
    message: 'changing the owner of an object is not allowed: everything in a repo belongs to its owner',
    hint: collaboratorHint,
  } satisfies Refusal,
  database: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: repobase has one database; your data lives in repos`,
    hint: 'create a repo with CREATE SCHEMA "<your user>/<repo>"',
  }),
  server: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: the server is administered by repobase`,
  }),
  extension: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: extensions are installed by the service, not by users`,
  }),
  foreignData: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: repobase does not reach other servers or foreign data`,
  }),
  replication: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: replication is administered by the service`,
  }),
  language: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: functions can be written in LANGUAGE sql or plpgsql`,
  }),
  tablespace: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: storage is managed by the service`,
  }),
  eventTrigger: (what: string): Refusal => ({
    code: denied,
    message: `${what} is not allowed: event triggers would run for every user`,
  }),
  copyFile: {
    code: denied,
    message: 'COPY to or from a server file or program is not allowed',
    hint: 'use COPY … FROM STDIN or COPY … TO STDOUT (psql: \\copy), or the upload API',
  } satisfies Refusal,
  citusFunction: (name: string): Refusal => ({
    code: denied,
    message: `${name}() is not allowed: Citus' administrative functions are for the operator of the cluster`,
    hint: 'repos are placed and moved by the service (repobase repo move, for operators)',
  }),
  citusMetadata: (name: string): Refusal => ({
    code: denied,
    message: `reading ${name} is not allowed: Citus' metadata describes every user's repos and the cluster's nodes`,
    hint: `a table of yours with this name is reached through its repo: "<user>/<repo>".${name}`,
  }),
  citusSetting: (name: string): Refusal => ({
    code: denied,
    message: `setting ${name} is not allowed: Citus settings are for the operator of the cluster`,
    hint: 'remove it; RESET returns a Citus setting to the operator\'s value',
  }),
  typeIoFunction: (name: string): Refusal => ({
    code: denied,
    message: `${name}() is not allowed: type input and output functions are called by Postgres itself`,
    hint: "cast the value instead, e.g. '42'::int or value::text",
  }),
  internalFunction: (name: string): Refusal => ({
    code: denied,
    message: `${name}() is not allowed: it is for Postgres' own use`,
  }),
  activityFunction: (name: string): Refusal => ({
    code: denied,
    message: `${name}() is not allowed: it shows other users' sessions`,
    hint: 'read pg_stat_activity (or the pg_stat_progress_* views): they show your own sessions',
  }),
  sqlTextFunction: (name: string): Refusal => ({
    code: denied,
    message: `${name}() is not allowed: it runs SQL given as text, which repobase cannot check`,
    hint: 'run the query itself instead',
  }),
  fileFunction: (name: string): Refusal => ({
    code: denied,
    message: `${name}() is not allowed: it reads or writes files on the server`,
    hint: 'load data with COPY … FROM STDIN (psql: \\copy) or the upload API',
  }),
  nonConstant: (fn: string, what: string): Refusal => ({
    code: unsupported,
    message: `${fn}() needs a constant ${what} here, so repobase can tell what it changes`,
  }),
  /** A statement with non-ASCII text in a client_encoding the proxy cannot decode exactly (EUC_TW, JOHAB, MULE_INTERNAL…). */
  changedReading: (name: string, value: string): Refusal => ({
    code: unsupported,
    message: `${name} is ${value} in this session, which repobase cannot decode exactly: only statements in ASCII pass, so that Postgres reads them as the check does`,
    hint: `write other characters as escapes (U&'\\4E2D'), or use an encoding repobase reads (SET ${name} TO UTF8; see docs/encodings.md)`,
  }),
  otherLanguage: (language: string): Refusal => ({
    code: unsupported,
    message: `LANGUAGE ${language} is not supported: functions and DO blocks can be written in sql or plpgsql`,
  }),
  schemaElements: {
    code: unsupported,
    message: 'CREATE SCHEMA with schema elements is not supported',
    hint: 'create the repo first, then its tables in separate statements',
  } satisfies Refusal,
  schemaInBody: {
    code: unsupported,
    message: 'repos can only be created and dropped by a top-level CREATE SCHEMA / DROP SCHEMA statement',
  } satisfies Refusal,
  dropManyRepos: {
    code: unsupported,
    message: 'DROP SCHEMA of several repos at once is not supported',
    hint: 'drop one repo per statement',
  } satisfies Refusal,
  renameRepo: {
    code: unsupported,
    message: 'renaming a repo with ALTER SCHEMA is not supported',
    hint: 'create a new repo and move the tables with ALTER TABLE … SET SCHEMA',
  } satisfies Refusal,
  securityLabel: { code: unsupported, message: 'SECURITY LABEL is not supported by repobase' } satisfies Refusal,
  unsupported: (what: string): Refusal => ({ code: unsupported, message: `${what} is not supported by repobase` }),
};
