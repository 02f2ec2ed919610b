// The policy: SQL text + principal + session in, a decision out. Pure: no I/O besides the
// parsers' WASM, loaded once here.
import { SqlState } from '../shared/errors.js';
import { analyse, type Reading } from './analyse.js';
import { RecentlyUsedCache } from './cache.js';
import { literalShape } from './shape.js';
import { StatementMemo, samePaths } from './statement-memo.js';
import { evaluate, toError } from './decide.js';
import type { Analysis } from './facts.js';
import { loadParsers } from './parse.js';
import { createParsePool } from './pool.js';
import { misreadRefusal } from './settings.js';
import { lendComment, lendList } from './key-scope.js';
import { overQuota } from './resolve.js';
import type { PgError } from '../shared/errors.js';
import type { Decision, Policy, PolicyOptions, Rights, Session, StorageUse } from './types.js';

export { clientChannel, SENDERS_PREFIX } from './channels.js';
export { BACKEND_PID_SETTING, SIGNAL_SQLSTATE } from './backend-pid.js';
export { CATALOG_SCHEMA } from './catalog-views.js';
export { ACTIVITY_SETTING, HIDDEN_SETTING, SEQUENCES_SETTING, STATEMENTS_SETTING } from './session-stand-ins.js';
export { indexAfter } from './splices.js';
export { errorInOriginal } from './splices.js';

/** The 53100 of what would add to the data of `owner`'s repo `schema` while they keep more than their storage quota. */
export function quotaError(schema: string, owner: string, use: StorageUse): PgError {
  return toError(overQuota(schema, owner, use));
}
export type { Decision, HandledAction, KeyRights, Policy, PolicyOptions, RepoAccess, Rights, Session, SessionChange, SessionEffect, StorageUse } from './types.js';

/**
 * The denial of a statement Postgres could read differently from the policy's parser with the
 * session's reading settings at `reading` (standard_conforming_strings, client_encoding, as the
 * server last reported them); undefined when the text reads the same.
 */
export function misread(sql: string, reading: ReadonlyMap<string, string>): Decision | undefined {
  const refusal = misreadRefusal(sql, reading);
  return refusal && { kind: 'deny', error: toError(refusal) };
}

/** The default statement size limit: 64 MiB (multi-row INSERTs of ORMs and pandas run to megabytes). */
export const DEFAULT_MAX_STATEMENT_BYTES = 64 * 1024 * 1024;
const defaultCacheSize = 5000;
const cacheChars = 16 * 1024 * 1024;
const cacheKeyChars = 64 * 1024;
const defaultWorkerThreshold = 8 * 1024;
const plain: Reading = { escapeStrings: false };
const escaped: Reading = { escapeStrings: true };

/** Loads the parsers and returns a policy; one per process is enough (it is stateless but for its cache). */
export async function createPolicy(options: PolicyOptions): Promise<Policy> {
  await loadParsers();
  const cache = new RecentlyUsedCache<Analysis>(options.cacheSize ?? defaultCacheSize, cacheChars, cacheKeyChars);
  const threshold = options.workerThresholdBytes ?? defaultWorkerThreshold;
  const limit = options.maxStatementBytes;
  const pool = createParsePool(analyse);

  // Analyses by statement shape (numeric literals as 0): only allowed-as-is ones, whose decision
  // carries no text or position of the statement it was made for.
  const shapes = new RecentlyUsedCache<Analysis>(options.cacheSize ?? defaultCacheSize, cacheChars, cacheKeyChars);

  // The last allow of each analysis per rights snapshot, with the search path it was made for.
  // A snapshot is immutable (a change of rights makes a new one), so the same snapshot and an
  // equal path mean the same decision: a repeated statement skips resolving its names (measured:
  // ~0.9 of 1.5 µs per -M simple decision). Paths are compared by value because every connection
  // has its own session object; keyed by identity, clients of one user running the same
  // statements displaced each other's entry and every decision resolved its names again.
  const allowed = new WeakMap<Analysis, WeakMap<Rights, { session: Session; decision: Decision }>>();
  // Those made from a shape's analysis: they stand for every text of the shape (see StatementMemo).
  const byShape = new WeakSet<Decision>();
  function evaluateOnce(analysis: Analysis, rights: Rights, session: Session, shaped: boolean): Decision {
    let byRights = allowed.get(analysis);
    const last = byRights?.get(rights);
    if (last !== undefined && samePaths(last.session, session)) return last.decision;
    const decision = evaluate(analysis, rights, session);
    if (decision.kind === 'allow') {
      if (byRights === undefined) allowed.set(analysis, (byRights = new WeakMap()));
      byRights.set(rights, { session, decision });
      if (shaped) byShape.add(decision);
    }
    return decision;
  }

  function decide(sql: string, rights: Rights, session: Session): Decision | Promise<Decision> {
    if (session.standardConformingStrings === false && sql.includes('\\')) return decideEscaped(sql, rights, session);
    // The hot path: a repeated or prepared statement is one map lookup plus the rights check.
    // A text with numeric literals is looked up by its shape first: its own text is seldom
    // seen twice (each lookup of a new text hashes it for nothing), and a shape's analysis
    // serves every text of that shape. A text too long to be cached is not even hashed or
    // scanned here: that would stall the event loop for everybody (64 MiB take ~0.2 s); it
    // goes to the worker whole.
    const cacheable = sql.length <= cacheKeyChars;
    const shape = cacheable ? literalShape(sql) : undefined;
    const sameShape = shape === undefined ? undefined : shapes.get(shape);
    if (sameShape !== undefined) {
      const decision = evaluateOnce(sameShape, rights, session, true);
      if (decision.kind !== 'deny') return lend(decision, sameShape, sql, rights, session); // a denial is re-made below, with its own positions
    }
    const cached = cacheable ? cache.get(sql) : undefined;
    if (cached !== undefined) return lend(evaluateOnce(cached, rights, session, false), cached, sql, rights, session);
    const bytes = Buffer.byteLength(sql);
    if (bytes > limit) return tooLarge(bytes);
    if (bytes >= threshold) {
      return pool.analyse(sql, plain).then((analysis) => {
        cache.set(sql, analysis);
        return lend(evaluate(analysis, rights, session), analysis, sql, rights, session);
      });
    }
    const analysis = analyse(sql);
    // Effects replayed from the statement's text carry its position, which differs between texts of one shape.
    if (shape !== undefined && analysis.error === null && analysis.rewrite === null && analysis.channelText === undefined && !hasPositions(analysis)) shapes.set(shape, analysis);
    else cache.set(sql, analysis);
    return lend(evaluate(analysis, rights, session), analysis, sql, rights, session);
  }

  // With standard_conforming_strings off, a text with a backslash reads differently: its
  // analysis is its own, cached apart (no SQL text holds a NUL byte).
  function decideEscaped(sql: string, rights: Rights, session: Session): Decision | Promise<Decision> {
    const key = `\0E${sql}`;
    const cached = sql.length <= cacheKeyChars ? cache.get(key) : undefined;
    if (cached !== undefined) return lend(evaluate(cached, rights, session), cached, sql, rights, session);
    const bytes = Buffer.byteLength(sql);
    if (bytes > limit) return tooLarge(bytes);
    const done = (analysis: Analysis) => {
      cache.set(key, analysis);
      return lend(evaluate(analysis, rights, session), analysis, sql, rights, session);
    };
    return bytes >= threshold ? pool.analyse(sql, escaped).then(done) : done(analyse(sql, escaped));
  }

  function tooLarge(bytes: number): Decision {
    return { kind: 'deny', error: toError({ code: SqlState.ProgramLimitExceeded, message: `statement is too large: ${bytes} bytes, the limit is ${limit}` }) };
  }

  const made = (d: Decision) => byShape.has(d);
  return { decide, forClient: () => new StatementMemo(decide, made).decide, close: () => pool.close() };
}

/**
 * A write key's statement that changes objects of its repos, sent with the comment that asks
 * Postgres to lend them to the key's role for the command (key-scope.ts, control/key-triggers.ts).
 * Made per call, never cached with the analysis: a decision by shape serves texts that differ.
 */
function lend(decision: Decision, analysis: Analysis, sql: string, rights: Rights, session: Session): Decision {
  if (rights.key?.access !== 'write' || (decision.kind !== 'allow' && decision.kind !== 'rewrite')) return decision;
  const list = lendList(analysis.statements, rights, session.searchPath);
  if (list.length === 0) return decision;
  const comment = lendComment(list);
  const edit = [[0, 0, comment.length] as const];
  if (decision.kind === 'rewrite') return { ...decision, sql: comment + decision.sql, edits: [...decision.edits, edit] };
  return { ...decision, kind: 'rewrite', sql: comment + sql, edits: [edit] };
}

function hasPositions(analysis: Analysis): boolean {
  return analysis.effects?.some((list) => list.some((e) => e.kind === 'set_text' || e.kind === 'prepare')) ?? false;
}
