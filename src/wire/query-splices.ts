/**
 * A client's Query as it goes upstream when pooling changes it: a SHOW of a custom setting the
 * client never set replaced by a stand-in that fails as Postgres would (custom-settings.ts), and a
 * statement of the proxy's put right after a reset that a later statement of the string depends
 * on (reset-restore.ts). Positions are those of the client's text, carried into the text sent
 * (the policy's rewrite, if any).
 */
import { indexAfter, type Decision } from '../policy/index.js';
import type { PgError } from '../shared/errors.js';
import type { Restore } from './reset-restore.js';
import { standIn } from './stand-in.js';

type Forwarded = Extract<Decision, { kind: 'allow' | 'rewrite' }>;

/** The text to send instead of the client's, or undefined when nothing changes. */
export function splicedQuery(d: Forwarded, sql: string, shown: { error: PgError; start: number; end: number } | undefined, restores: readonly Restore[] | undefined): string | undefined {
  if (shown === undefined && restores === undefined) return undefined;
  const edits = d.kind === 'rewrite' ? d.edits : [];
  const at = (i: number) => edits.reduce((index, layer) => indexAfter(index, layer), i);
  const splices: { from: number; to: number; text: string }[] = [];
  if (shown !== undefined) splices.push({ from: at(shown.start), to: at(shown.end), text: standIn(shown.error) });
  // One statement per line: a statement ending in a line comment cannot swallow the next.
  for (const r of restores ?? []) splices.push({ from: at(r.end), to: at(r.end), text: `\n;${r.sql}\n` });
  splices.sort((a, b) => b.from - a.from);
  let text = d.kind === 'rewrite' ? d.sql : sql;
  for (const s of splices) text = text.slice(0, s.from) + s.text + text.slice(s.to);
  return text;
}
