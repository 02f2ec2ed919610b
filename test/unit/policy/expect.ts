// Table-driven policy cases: [sql, expected] (optionally with a session), asserting the exact
// decision kind and, for denials, the SQLSTATE and the repo or schema the message names.
import { expect, test } from 'vitest';
import type { Decision, HandledAction, Session, SessionChange } from '../../../src/policy/index.js';
import { decide, inSales, summary } from './fixture.js';

export type Expected =
  | { kind: 'allow'; changes?: readonly SessionChange[] }
  | { kind: 'deny'; code: string; names?: string }
  | { kind: 'rewrite'; sql: string }
  | { kind: 'handled'; action: HandledAction };

export const allow: Expected = { kind: 'allow' };
/** Denied with `code`; the message must quote `names` ("bob/secret", "public"). */
export const deny = (code: string, names?: string): Expected => ({ kind: 'deny', code, ...(names !== undefined && { names }) });
export const denied = (names?: string): Expected => deny('42501', names);
export const unsupported: Expected = deny('0A000');
export const rewrite = (sql: string): Expected => ({ kind: 'rewrite', sql });
export const changes = (...c: SessionChange[]): Expected => ({ kind: 'allow', changes: c });

export type Case = readonly [sql: string, expected: Expected] | readonly [sql: string, expected: Expected, session: Session];

/** Asserts one decision against its expectation. */
export function check(d: Decision, e: Expected): void {
  expect(d.kind, summary(d)).toBe(e.kind);
  if (d.kind === 'deny' && e.kind === 'deny') {
    expect(d.error.code, d.error.message).toBe(e.code);
    if (e.names !== undefined) expect(d.error.message).toContain(`"${e.names}"`);
  } else if (d.kind === 'rewrite' && e.kind === 'rewrite') {
    expect(d.sql).toBe(e.sql);
  } else if (d.kind === 'handled' && e.kind === 'handled') {
    expect(d.action).toEqual(e.action);
  } else if (d.kind === 'allow' && e.kind === 'allow' && e.changes !== undefined) {
    expect(d.changes).toEqual(e.changes);
  }
}

/** One test per case, titled by its SQL (control characters escaped, long text cut). */
export function table(cases: readonly Case[]): void {
  for (const [sql, expected, session] of cases) {
    const shown = sql.length > 160 ? `${sql.slice(0, 150)}… (${sql.length} chars)` : sql;
    const title = session === undefined ? shown : `${shown} [search_path ${session.searchPath.join(', ')}]`;
    test(title.replace(/[\x00-\x1f\ud800-\udfff]/g, (c) => JSON.stringify(c).slice(1, -1)), async () => {
      check(await decide(sql, session ?? inSales), expected);
    });
  }
}
