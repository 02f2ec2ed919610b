/**
 * One client's memo of its recent statements decided by their shape (shape.ts): a client that
 * inlines its values (`pgbench -M simple`, an ORM without parameters) sends a new text for every
 * call, and each would be shaped and looked up in the policy's caches again (measured: about 5 µs
 * of a simple statement's 60 under sampling). The memo recognises the next text of one of those
 * shapes by comparing it with the last text seen of it, numbers skipped, and returns the decision
 * the policy would make for it: only a decision that stands for every text of its shape (the
 * policy says which), only for the same rights snapshot and a session with the same paths.
 */
import { policyCacheHit } from '../observe/metrics.js';
import { literalSpans, plainSpans, sameShapeAs } from './shape.js';
import type { Decision, Policy, Rights, Session } from './types.js';

type Decide = Policy['decide'];

/**
 * The shapes a client's memo keeps: a transaction's statements. TPC-B has five with numbers in
 * nine shapes, since a negative number is `-` before a literal (`abalance + -0`, `abalance + 0`):
 * with eight, 45 % of them missed, each pushing out another, and a transaction cost about 4 %
 * more CPU than with no memo; with sixteen, none miss.
 */
const ENTRIES = 16;
/** A longer text is not kept: the comparison would cost more than the lookup it saves. */
const MAX_CHARS = 2048;

interface Entry {
  sql: string;
  spans: readonly number[];
  rights: Rights;
  session: Session;
  decision: Decision;
}

export class StatementMemo {
  private readonly entries: Entry[] = [];
  private next = 0;
  /** Where the last one was found: clients run their statements in the same order, so the next is looked for after it. */
  private last = 0;

  constructor(
    private readonly decideOnce: Decide,
    /** Whether the policy made `d` for the shape of its text, so that it stands for every text of it. */
    private readonly byShape: (d: Decision) => boolean,
  ) {}

  readonly decide: Decide = (sql, rights, session) => {
    const entries = this.entries;
    const n = entries.length;
    for (let k = 0, at = this.last; k < n; k++) {
      if (++at >= n) at = 0;
      const e = entries[at]!;
      if (e.rights === rights && sameSession(e.session, session) && sameShapeAs(sql, e.sql, e.spans)) {
        policyCacheHit.value++;
        this.last = at;
        return e.decision;
      }
    }
    const d = this.decideOnce(sql, rights, session);
    if (!(d instanceof Promise) && sql.length <= MAX_CHARS && this.byShape(d)) this.remember(sql, rights, session, d);
    return d;
  };

  private remember(sql: string, rights: Rights, session: Session, decision: Decision): void {
    const spans = literalSpans(sql);
    if (spans === undefined || !plainSpans(sql, spans)) return;
    const entry = { sql, spans, rights, session, decision };
    const entries = this.entries;
    // A shape seen before gives up its place (its rights or session changed); else the oldest does.
    for (let k = 0; k < entries.length; k++) if (sameShapeAs(sql, entries[k]!.sql, entries[k]!.spans)) return void (entries[k] = entry);
    if (entries.length < ENTRIES) entries.push(entry);
    else entries[this.next] = entry;
    this.next = (this.next + 1) % ENTRIES;
  }
}

function samePath(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether two sessions resolve names alike: the same search path and default search path. */
export function samePaths(a: Session, b: Session): boolean {
  return samePath(a.searchPath, b.searchPath) && samePath(a.defaultSearchPath, b.defaultSearchPath);
}

/** Whether the policy reads a statement alike in both: the same paths, and standard_conforming_strings. */
function sameSession(a: Session, b: Session): boolean {
  return a === b || (samePaths(a, b) && a.standardConformingStrings === b.standardConformingStrings);
}
