/**
 * Completion of the person's repos, tables and columns in the SQL editor, each inserted as a
 * quoted identifier (`"alice/sales"."Orders 2024"."Unit price"`, inner `"` doubled), whatever
 * was typed so far: nothing, part of the name, or an opening quote.
 *
 * - At the top of an expression: the repos, and the columns (and aliases) of the tables the
 *   statement names — `SELECT "Un|" FROM "alice/sales"."Orders 2024"` completes `"Unit price"`.
 * - After `"alice/sales".`: its tables. After `"alice/sales"."Orders 2024".` or an alias and a dot:
 *   the columns.
 *
 * Metadata comes from `GET /repos/?include=shared` and `GET /repos/<owner>/<repo>/`, each
 * fetched once per page (SchemaCache) and forgotten when a statement may have changed it.
 */
import { pickedCompletion, type Completion, type CompletionContext, type CompletionResult, type CompletionSource } from '@codemirror/autocomplete';
import type { EditorView } from '@codemirror/view';
import { getRepo, listRepos, type Repo, type RepoDetail } from '../api.ts';
import { quoteIdent } from '../lib/sql.ts';
import { splitStatements } from './statements.ts';

type Table = RepoDetail['tables'][number];

/** Repos and their tables, loaded on first use and kept for the page. */
export class SchemaCache {
  #repos: Promise<Repo[]> | null = null;
  #details = new Map<string, Promise<RepoDetail | null>>();

  repos(): Promise<Repo[]> {
    this.#repos ??= listRepos().catch(() => {
      this.#repos = null;
      return [];
    });
    return this.#repos;
  }

  /** A repo's tables and columns by its full name; null if it cannot be read. */
  repo(name: string): Promise<RepoDetail | null> {
    let found = this.#details.get(name);
    if (!found) {
      const slash = name.indexOf('/');
      found = slash < 0 ? Promise.resolve(null) : getRepo(name.slice(0, slash), name.slice(slash + 1)).catch(() => null);
      this.#details.set(name, found);
    }
    return found;
  }

  /** After DDL: load everything again when next needed. */
  clear(): void {
    this.#repos = null;
    this.#details.clear();
  }
}

// --- reading the statement -------------------------------------------------------------------

interface Ident {
  kind: 'ident';
  /** The name as Postgres reads it: quoted as written (`""` undone), unquoted folded to lower case. */
  name: string;
  /** As written, for unquoted names (case kept, for a case-insensitive match). */
  raw: string;
  quoted: boolean;
  /** False for a quoted name whose closing quote is not typed yet. */
  closed: boolean;
  from: number;
  to: number;
}
type Token = Ident | { kind: 'dot' | 'other'; from: number; to: number };

const WORD = /[\p{L}_][\p{L}\p{N}_$]*/uy;
const NUMBER = /\d+(?:\.\d*)?(?:[eE][+-]?\d+)?/y;
const SPACE = /\s+/y;

/** The tokens of `text`; `literal` when it ends inside a string or a comment (nothing to complete there). */
function tokenize(text: string): { tokens: Token[]; literal: boolean } {
  const tokens: Token[] = [];
  const n = text.length;
  const at = (re: RegExp, i: number) => {
    re.lastIndex = i;
    return re.exec(text)?.[0];
  };
  for (let i = 0; i < n; ) {
    const c = text[i]!;
    const space = at(SPACE, i);
    if (space) {
      i += space.length;
      continue;
    }
    if (c === '"') {
      let name = '';
      let j = i + 1;
      let closed = false;
      while (j < n) {
        if (text[j] === '"') {
          if (text[j + 1] === '"') {
            name += '"';
            j += 2;
            continue;
          }
          closed = true;
          j++;
          break;
        }
        name += text[j];
        j++;
      }
      tokens.push({ kind: 'ident', name, raw: name, quoted: true, closed, from: i, to: j });
      i = j;
      continue;
    }
    if (c === "'" || (c === '-' && text[i + 1] === '-') || (c === '/' && text[i + 1] === '*') || c === '$') {
      const end = skipLiteral(text, i);
      if (end === null) return { tokens, literal: true };
      if (end > i) {
        tokens.push({ kind: 'other', from: i, to: end });
        i = end;
        continue;
      }
    }
    const word = at(WORD, i);
    if (word) {
      tokens.push({ kind: 'ident', name: word.toLowerCase(), raw: word, quoted: false, closed: true, from: i, to: i + word.length });
      i += word.length;
      continue;
    }
    const number = at(NUMBER, i);
    if (number) {
      tokens.push({ kind: 'other', from: i, to: i + number.length });
      i += number.length;
      continue;
    }
    tokens.push({ kind: c === '.' ? 'dot' : 'other', from: i, to: i + 1 });
    i++;
  }
  return { tokens, literal: false };
}

/** The end of the string, comment or dollar quote at `i`; null if it is not closed; `i` if none starts there. */
function skipLiteral(text: string, i: number): number | null {
  const c = text[i];
  if (c === "'") {
    const escapes = /[eE]/.test(text[i - 1] ?? '') && !/[\p{L}\p{N}_$]/u.test(text[i - 2] ?? '');
    for (let j = i + 1; j < text.length; j++) {
      if (escapes && text[j] === '\\') j++;
      else if (text[j] === "'") {
        if (text[j + 1] === "'") j++;
        else return j + 1;
      }
    }
    return null;
  }
  if (c === '-') {
    const eol = text.indexOf('\n', i);
    return eol === -1 ? null : eol;
  }
  if (c === '/') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      if (text[j] === '/' && text[j + 1] === '*') {
        depth++;
        j++;
      } else if (text[j] === '*' && text[j + 1] === '/') {
        depth--;
        j++;
        if (depth === 0) return j + 1;
      }
    }
    return null;
  }
  // `$tag$`, not `$1` or the `$` inside a name.
  if (/[\p{L}\p{N}_$]/u.test(text[i - 1] ?? '')) return i;
  const tag = /\$(?:[\p{L}_][\p{L}\p{N}_]*)?\$/uy;
  tag.lastIndex = i;
  const found = tag.exec(text)?.[0];
  if (!found) return i;
  const close = text.indexOf(found, i + found.length);
  return close === -1 ? null : close + found.length;
}

/** Words that follow a table in FROM without being its alias. */
const NOT_ALIAS = new Set(
  'where join inner left right full outer cross natural lateral on using group order having limit offset fetch for window union intersect except returning set values select from as with and or not'.split(' '),
);

interface TableRef {
  repo: string;
  table: string;
  alias: string | null;
}

/** A name written in the statement matched against known names: exactly, else ignoring case for an unquoted one. */
function matchName(id: Ident, names: readonly string[]): string | undefined {
  return names.find((n) => n === id.name) ?? (id.quoted ? undefined : names.find((n) => n.toLowerCase() === id.raw.toLowerCase()));
}

/** The `"repo"."table" [AS] alias` references of a statement (names only: tables are checked later). */
function tableRefs(tokens: Token[], repoNames: readonly string[]): TableRef[] {
  const refs: TableRef[] = [];
  for (let i = 0; i + 2 < tokens.length; i++) {
    const a = tokens[i]!;
    const dot = tokens[i + 1]!;
    const b = tokens[i + 2]!;
    if (a.kind !== 'ident' || dot.kind !== 'dot' || b.kind !== 'ident' || !a.closed || !b.closed) continue;
    if (i > 0 && tokens[i - 1]!.kind === 'dot') continue;
    const repo = matchName(a, repoNames);
    if (!repo) continue;
    let next = tokens[i + 3];
    if (next?.kind === 'ident' && !next.quoted && next.name === 'as') next = tokens[i + 4];
    const alias = next?.kind === 'ident' && next.closed && (next.quoted || !NOT_ALIAS.has(next.name)) && tokens[i + 4]?.kind !== 'dot' ? next : null;
    refs.push({ repo, table: b.quoted ? b.name : b.raw, alias: alias ? alias.name : null });
  }
  return refs;
}

/** What the cursor is completing: the typed start of a name and the names before it (`a.b.|`). */
interface Target {
  /** Where the typed part of the name starts (after an opening quote). */
  from: number;
  /** An opening quote was typed (at from - 1). */
  quoted: boolean;
  typed: string;
  parents: Ident[];
}

/** `alice/sa` typed without quotes: a repo name being typed (a `/` is an operator to the lexer). */
const UNQUOTED_REPO = /(?:^|[^\p{L}\p{N}_$"./])([\p{L}_][\p{L}\p{N}_$]*\/[\p{L}\p{N}_-]*)$/u;

function targetAt(before: string, tokens: Token[]): Target | null {
  const repoTyped = UNQUOTED_REPO.exec(before);
  if (repoTyped) return { from: before.length - repoTyped[1]!.length, quoted: false, typed: repoTyped[1]!, parents: [] };
  let k = tokens.length - 1;
  let last = tokens[k];
  let target: Target;
  if (last?.kind === 'ident' && last.to === before.length) {
    if (last.quoted && last.closed) return null;
    target = last.quoted ? { from: last.from + 1, quoted: true, typed: last.name, parents: [] } : { from: last.from, quoted: false, typed: last.raw, parents: [] };
    last = tokens[--k];
  } else {
    target = { from: before.length, quoted: false, typed: '', parents: [] };
  }
  while (target.parents.length < 2 && last?.kind === 'dot') {
    const name = tokens[k - 1];
    if (name?.kind !== 'ident' || !name.closed) return null;
    target.parents.unshift(name);
    k -= 2;
    last = tokens[k];
  }
  return target;
}

// --- completions -------------------------------------------------------------------------------

/** Inserts `"name"` over the typed part (and its opening quote, and a closing quote right after). */
function insertQuoted(name: string, quoted: boolean) {
  return (view: EditorView, completion: Completion, from: number, to: number) => {
    const start = quoted ? from - 1 : from;
    const end = quoted && view.state.sliceDoc(to, to + 1) === '"' ? to + 1 : to;
    const insert = quoteIdent(name);
    view.dispatch({
      changes: { from: start, to: end, insert },
      selection: { anchor: start + insert.length },
      annotations: pickedCompletion.of(completion),
      userEvent: 'input.complete',
    });
  };
}

function option(name: string, type: string, detail: string, quoted: boolean, boost = 0): Completion {
  return { label: name, type, detail, boost, apply: insertQuoted(name, quoted) };
}

function columnOptions(table: Table, quoted: boolean, where?: string): Completion[] {
  return table.columns.map((c) => option(c.name, 'property', where ? `${c.type} · ${where}` : c.type, quoted, 2));
}

const findTable = (detail: RepoDetail | null, name: string) => detail?.tables.find((t) => t.name === name) ?? detail?.tables.find((t) => t.name.toLowerCase() === name.toLowerCase());

/** The part of the document around `pos` between two `;` (or its ends). */
function segmentAt(doc: string, pos: number): { from: number; to: number } {
  let from = 0;
  for (const s of splitStatements(doc)) {
    if (pos <= s.end) return { from: Math.min(from, pos), to: s.end };
    from = s.end;
  }
  return { from: Math.min(from, pos), to: doc.length };
}

/** The completion source of repos, tables and columns. */
export function schemaCompletion(cache: SchemaCache): CompletionSource {
  return async (context: CompletionContext): Promise<CompletionResult | null> => {
    const doc = context.state.doc.toString();
    const segment = segmentAt(doc, context.pos);
    const before = doc.slice(segment.from, context.pos);
    const { tokens, literal } = tokenize(before);
    if (literal) return null;
    const target = targetAt(before, tokens);
    if (!target) return null;
    if (target.parents.length === 0 && target.typed === '' && !target.quoted && !context.explicit) return null;

    const repos = await cache.repos();
    const repoNames = repos.map((r) => r.name);
    const from = segment.from + target.from;
    const { quoted } = target;
    let options: Completion[] = [];
    // The statement's tables, read without the name being typed (an unclosed quote would swallow the rest).
    const refs = () => {
      const typedFrom = target.from - (quoted ? 1 : 0);
      return tableRefs(tokenize(`${before.slice(0, typedFrom)} ${doc.slice(context.pos, segment.to)}`).tokens, repoNames);
    };

    const [first, second] = target.parents;
    if (first && second) {
      const repo = matchName(first, repoNames);
      const table = repo ? findTable(await cache.repo(repo), second.quoted ? second.name : second.raw) : undefined;
      if (table) options = columnOptions(table, quoted);
    } else if (first) {
      const repo = matchName(first, repoNames);
      if (repo) {
        const detail = await cache.repo(repo);
        options = (detail?.tables ?? []).map((t) => option(t.name, 'class', `table · ${t.columns.length} columns`, quoted, 1));
      } else {
        const all = refs();
        const ref = all.find((r) => r.alias === first.name) ?? all.find((r) => r.table === (first.quoted ? first.name : first.raw));
        const table = ref ? findTable(await cache.repo(ref.repo), ref.table) : undefined;
        if (table) options = columnOptions(table, quoted);
      }
    } else {
      options = repos.map((r) => option(r.name, 'namespace', 'repo', quoted));
      for (const ref of refs()) {
        const table = findTable(await cache.repo(ref.repo), ref.table);
        if (table) options.push(...columnOptions(table, quoted, ref.alias ?? table.name));
        if (ref.alias) options.push({ label: ref.alias, type: 'variable', detail: `${ref.repo}.${ref.table}` });
      }
    }
    if (options.length === 0) return null;
    // Names may hold spaces and `/`: ask again on every keystroke rather than guess when the list stays valid.
    return { from, options, filter: true };
  };
}
