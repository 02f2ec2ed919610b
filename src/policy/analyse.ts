// Query string → Analysis: parse, walk every statement, apply the seed rule. Independent of who
// asks, so the result is cached by text and serves every user.
import { SqlState } from '../shared/errors.js';
import { bodyHandlers } from './bodies.js';
import { catalogHandlers, noteCatalogRelation } from './catalog-refs.js';
import { catalogRewrite } from './catalog-rewrite.js';
import { ddlHandlers } from './ddl.js';
import { dmlHandlers } from './dml.js';
import { expressionHandlers } from './expressions.js';
import type { Analysis, Rewritten, StatementFacts } from './facts.js';
import { nodeOf, type Json } from './json.js';
import { objectHandlers } from './objects.js';
import { offsetsOf, type Offsets } from './offsets.js';
import { parseSql, type RawStatement } from './parse.js';
import { isSettingFree } from './setting-free.js';
import { seedRewrite, type StatementText } from './rewrite.js';
import { COMPACT_MIN_CHARS, compactValues } from './compact.js';
import { indexAfter, indexBefore, originalPosition, type Edit } from './splices.js';
import { withEscapeStrings } from './escapes.js';
import { forbiddenStatements, ruleHandlers } from './rules.js';
import { sessionEffects } from './session-effects.js';
import { grantHandlers } from './grants.js';
import { noScope, Walker, type HandlerEntry, type WalkContext } from './walker.js';

const handlers: ReadonlyMap<string, HandlerEntry> = new Map([
  ...dmlHandlers,
  ...ddlHandlers,
  ...objectHandlers,
  ...bodyHandlers,
  ...ruleHandlers,
  ...expressionHandlers,
  ...catalogHandlers,
  ...grantHandlers,
]);

function newFacts(node: Json, start = 0): StatementFacts {
  const kind = nodeOf(node)?.[0] ?? 'unknown';
  return {
    start,
    kind,
    command: handlers.get(kind)?.command ?? kind.replace(/Stmt$/, ''),
    refs: [],
    functions: [],
    bodies: [],
    settings: [],
    functionPaths: [],
    channels: [],
    channelSpans: [],
    catalog: [],
    owners: [],
    shares: [],
    shareCommand: null,
    userCall: null,
    writerCall: null,
    largeObjectCall: null,
    readWrite: false,
    refusal: null,
    schema: null,
    settingFree: false,
  };
}

function statementText(sql: string, raw: RawStatement, offsets: Offsets): { start: number; end: number } {
  return {
    start: offsets.index(raw.start),
    end: raw.length === undefined ? sql.length : offsets.index(raw.start + raw.length),
  };
}

function walk(facts: StatementFacts, node: Json, ctx: Omit<WalkContext, 'handlers' | 'forbidden' | 'nested' | 'readRelation'>): void {
  const w = new Walker(facts, { ...ctx, handlers, forbidden: forbiddenStatements, nested, readRelation: noteCatalogRelation });
  w.visit(node, 'read', noScope);
}

/** SQL found in a function body or DO block, walked into the enclosing statement's facts. */
function nested(w: Walker, sql: string, path: string[] | null): void {
  if (sql.trim() === '') return;
  const parsed = parseSql(sql);
  if (!parsed.ok) {
    w.refuse({ code: SqlState.SyntaxError, message: parsed.message, detail: 'in the body of a function or DO block' });
    return;
  }
  const offsets = offsetsOf(sql);
  for (const raw of parsed.statements) {
    const { start, end } = statementText(sql, raw, offsets);
    const inner = new Walker(w.facts, { handlers, forbidden: forbiddenStatements, nested, readRelation: noteCatalogRelation, offsets: null, path, body: true, text: sql.slice(start, end) });
    inner.command = newFacts(raw.node).command;
    inner.visit(raw.node, 'read', noScope);
  }
}

/**
 * The string to forward instead of `sql` with the edits of each rewrite (to map error positions
 * back), or null: catalog reads redirected to the filtered views first (a refusal when that
 * cannot be done safely), then the seed rule on the result.
 */
function rewrite(sql: string, texts: readonly StatementText[], statements: StatementFacts[], offsets: Offsets): Rewritten | null {
  const refs = statements.flatMap((s) => s.catalog);
  if (refs.length === 0) {
    const seeded = seedRewrite(sql, texts, offsets);
    return seeded === null ? null : { sql: seeded.sql, edits: [seeded.edits] };
  }
  const redirected = catalogRewrite(sql, texts, refs, offsets);
  if ('code' in redirected) {
    const first = statements.find((s) => s.catalog.length > 0);
    if (first !== undefined) first.refusal ??= redirected;
    return null;
  }
  const out = redirected.sql;
  const outOffsets = offsetsOf(out);
  const seeded = seedRewrite(out, redirected.parsed.map((raw) => ({ node: raw.node, ...statementText(out, raw, outOffsets) })), outOffsets);
  return seeded === null ? { sql: out, edits: [redirected.edits] } : { sql: seeded.sql, edits: [redirected.edits, seeded.edits] };
}

const hasLoneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** How Postgres reads the text: with standard_conforming_strings off, a backslash in '…' escapes. */
export interface Reading {
  escapeStrings: boolean;
}

const standard: Reading = { escapeStrings: false };

/**
 * Analyses a whole query string. Read with escape strings (`escapes.ts`), the text is judged as
 * Postgres will read it; a large one with its runs of constant VALUES rows cut to one row each
 * (`compact.ts`), unless that analysis rewrites the text (which must then be done on all of it).
 * Positions in the analysis are those of the text as sent.
 */
export function analyse(sql: string, reading: Reading = standard): Analysis {
  const escaped = reading.escapeStrings ? withEscapeStrings(sql) : undefined;
  const text = escaped?.sql ?? sql;
  const compact = text.length >= COMPACT_MIN_CHARS ? compactValues(text) : undefined;
  if (escaped === undefined && compact === undefined) return analyseText(sql);
  let a = compact === undefined ? analyseText(text) : analyseText(compact.sql);
  let layers: Edit[][] = [];
  if (compact !== undefined && (a.rewrite !== null || a.channelText !== undefined)) a = analyseText(text);
  else if (compact !== undefined) layers = [compact.edits];
  if (escaped !== undefined) {
    layers = [escaped.edits, ...layers];
    // The rewrite is of the text as read: E'…' strings read with the setting off as '…' did.
    if (a.rewrite !== null) a.rewrite = { sql: a.rewrite.sql, edits: [escaped.edits, ...a.rewrite.edits] };
  }
  if (layers.length > 0) positionsBack(a, compact?.sql ?? text, sql, layers);
  return a;
}

/** Counts an analysis' positions in `original` instead of the `analysed` text the layers made from it. */
function positionsBack(a: Analysis, analysed: string, original: string, layers: readonly Edit[][]): void {
  const position = (p: number) => originalPosition(p, analysed, original, layers);
  const index = (i: number) => layers.reduceRight((at, edits) => indexBefore(at, edits), i);
  if (a.error?.position !== undefined) a.error.position = position(a.error.position);
  for (const s of a.statements) {
    s.start = index(s.start);
    if (s.refusal?.position !== undefined) s.refusal.position = position(s.refusal.position);
    for (const ref of s.refs) if (ref.position !== null) ref.position = position(ref.position);
    for (const setting of s.settings) if (setting.kind === 'search_path' && setting.position !== null) setting.position = position(setting.position);
  }
}

function analyseText(sql: string): Analysis {
  if (sql.includes('\0') || hasLoneSurrogate.test(sql)) {
    return { error: { code: SqlState.CharacterNotInRepertoire, message: 'invalid byte sequence for encoding "UTF8"' }, statements: [], rewrite: null };
  }
  if (sql.trim() === '') return { error: null, statements: [], rewrite: null };
  try {
    const parsed = parseSql(sql);
    if (!parsed.ok) {
      return { error: { code: SqlState.SyntaxError, message: parsed.message, position: parsed.cursor + 1 }, statements: [], rewrite: null };
    }
    const offsets = offsetsOf(sql);
    const texts = parsed.statements.map((raw) => ({ node: raw.node, ...statementText(sql, raw, offsets) }));
    const statements = texts.map(({ node, start, end }) => {
      const facts = newFacts(node, start);
      walk(facts, node, { offsets, path: null, body: false, text: sql.slice(start, end) });
      return facts;
    });
    const rewritten = rewrite(sql, texts, statements, offsets);
    const effects = texts.map((t) => sessionEffects(t.node, t));
    const session = effects.some((e) => e.length > 0) ? { effects } : {};
    for (const facts of statements) facts.settingFree = isSettingFree(facts);
    const channels = statements.find((s) => s.channelSpans.length > 0);
    if (channels === undefined) return { error: null, statements, rewrite: rewritten, ...session };
    if (rewritten === null) return { error: null, statements, rewrite: rewritten, channelText: sql, ...session };
    // Channels are spliced per user at decision time: into the rewritten text, where their names went.
    for (const s of statements) {
      for (const span of s.channelSpans) {
        span.from = rewritten.edits.reduce((at, edits) => indexAfter(at, edits), span.from);
        span.to = rewritten.edits.reduce((at, edits) => indexAfter(at, edits), span.to);
      }
    }
    return { error: null, statements, rewrite: rewritten, channelText: rewritten.sql, ...session };
  } catch (err: unknown) {
    // A tree deep enough to exhaust the stack (thousands of nested parentheses).
    if (err instanceof RangeError) {
      return { error: { code: SqlState.StatementTooComplex, message: 'statement is too complex: nested too deeply' }, statements: [], rewrite: null };
    }
    throw err;
  }
}
