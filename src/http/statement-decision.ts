/**
 * What the REST API does with one statement before it runs: the policy's decision with the
 * caller's rights — a statement to run (as sent, or the policy's rewrite of it), an error, or work
 * the control plane does itself (`CREATE SCHEMA` of a repo) — and, once it ran, its usage and, for
 * DDL, its audit row. `POST /query/` and the async runner decide the same way here.
 */
import type { FastifyRequest } from 'fastify';
import { isDdlTag, keyOfPrincipal, type AuditEvent, type AuditOrigin } from '../control/audit.js';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import { performHandled } from '../control/handled.js';
import type { Decision, Policy, Session } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import { REST_SEARCH_PATH } from '../upstream/role-pools.js';
import { decisions } from '../observe/metrics.js';
import { tagOrigin } from '../observe/error-origins.js';

/** Every REST statement is a session of its own, starting from the same search_path as its connection. */
const SESSION: Session = { searchPath: REST_SEARCH_PATH, defaultSearchPath: REST_SEARCH_PATH };

/** What each rewrite of the statement changed (see Decision). */
export type Edits = Extract<Decision, { kind: 'rewrite' }>['edits'];

/** A statement to run upstream: the SQL, what rewrites changed in it, and whether it can change a setting (Decision.settingFree). */
export interface Run {
  sql: string;
  edits?: Edits;
  settingFree: boolean;
}

/** Where an audited action came from: the request itself, or (for a statement run later, in the background) what was kept of it. */
export type AuditSource = FastifyRequest | AuditOrigin;

export interface DecisionDeps {
  control: ControlPlane;
  policy: Policy;
}

/** Where a request came from, kept as a plain object (a statement run later must not hold the request). */
export function originOf(source: AuditSource): AuditOrigin {
  if ('frontEnd' in source) return source;
  return { frontEnd: source.webSession ? 'console' : 'rest', source: source.ip, requestId: source.id };
}

/** Records an audited action of `principal` (only on the rare paths: denials, the control plane's work, DDL). */
function audit(control: ControlPlane, source: AuditSource, principal: Principal, event: Omit<AuditEvent, keyof AuditOrigin | 'user'>): void {
  control.audit.record({ ...originOf(source), user: principal.user, ...keyOfPrincipal(principal), ...event });
}

function oneStatement(count: number): void {
  if (count === 1) return;
  throw new PgError(SqlState.SyntaxError, count === 0 ? 'query_string holds no statement' : `query_string holds ${count} statements; the REST API runs one statement per request`, {
    hint: count === 0 ? undefined : 'send each statement in its own request, or use the Postgres wire protocol for scripts',
  });
}

/**
 * The SQL to run (the statement, or the policy's rewrite of it), or the command tag when the
 * control plane already did the work. Cached rights and a cached decision are used as they are:
 * the answer comes without a promise when nothing had to be waited for. A denial is thrown.
 */
export function decide(deps: DecisionDeps, principal: Principal, sql: string, source: AuditSource): Run | Promise<Run | { done: string }> {
  const rights = deps.control.peekRights(principal);
  const decided = rights ? deps.policy.decide(sql, rights, SESSION) : deps.control.rights(principal).then((r) => deps.policy.decide(sql, r, SESSION));
  return decided instanceof Promise ? decided.then<Run | { done: string }>((d) => follow(deps, principal, sql, source, d)) : follow(deps, principal, sql, source, decided);
}

/** What `decision` asks for: a statement to run, an error, or the control plane's work (`handled`). */
function follow(deps: DecisionDeps, principal: Principal, sql: string, source: AuditSource, decision: Decision): Run | Promise<{ done: string }> {
  decisions.rest[decision.kind].value++;
  switch (decision.kind) {
    case 'deny':
      audit(deps.control, source, principal, { action: 'statement_denied', sql, sqlstate: decision.error.code });
      throw tagOrigin(decision.error, 'policy');
    case 'handled':
      oneStatement(decision.commandTags.length);
      return handled(deps, principal, sql, source, decision);
    case 'allow':
      oneStatement(decision.statements);
      return { sql, settingFree: decision.settingFree === true };
    case 'rewrite':
      oneStatement(decision.statements);
      return { sql: decision.sql, edits: decision.edits, settingFree: decision.settingFree === true };
    default:
      return assertNever(decision);
  }
}

/** Runs a statement the control plane performs (`CREATE SCHEMA` of a repo, …) and audits its changes. */
async function handled(deps: DecisionDeps, principal: Principal, sql: string, source: AuditSource, decision: Extract<Decision, { kind: 'handled' }>): Promise<{ done: string }> {
  for (const change of await performHandled(deps.control, principal.user, decision.action)) audit(deps.control, source, principal, { ...change, sql });
  deps.control.usage.add(principal.user, { statements: 1 });
  return { done: decision.commandTags[0] ?? '' };
}

/** Usage of a statement that ran (the rows of its answer), and its audit row if it was DDL. */
export function ran(control: ControlPlane, source: AuditSource, principal: Principal, sql: string, command: string | null, rows: number): void {
  control.usage.add(principal.user, { statements: 1, rowsReturned: rows });
  if (command !== null && isDdlTag(command)) audit(control, source, principal, { action: 'ddl', target: command, sql });
}

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}
