/**
 * The query history's pages, without a database: an entry's id is a version-7 UUID that gives its
 * page, the page's time and its place back (and is never taken for an async query's version-4
 * id); entries are paged by user and key, in submission order, cut at a page's size.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { entriesOfBody, historyId, pageKey, paginate, placeOfHistoryId, type HistoryEntry, type Page } from '../../../src/control/history-pages.js';
import { isQueryId } from '../../../src/control/query-records.js';


function entry(user: string, keyId: string, submittedAt: number, status: HistoryEntry['status'] = 'succeeded'): HistoryEntry {
  return { user, keyId, queryString: `SELECT ${submittedAt}`, submittedAt, finishedAt: submittedAt + 2, status, command: 'SELECT', rowCount: 1, error: null };
}

describe('history ids', () => {
  it('are UUIDs of version 7 that hold their page, its time and the place in it', () => {
    for (const ms of [0, 1, Date.now(), Date.UTC(2100, 0, 1)]) {
      for (const index of [0, 1, 999, 4095]) {
        const place = { page: pageKey(), ms, index };
        const id = historyId(place);
        expect(isQueryId(id)).toBe(true);
        expect(id[14]).toBe('7');
        expect('89ab').toContain(id[19]);
        expect(placeOfHistoryId(id)).toEqual(place);
        expect(placeOfHistoryId(id.toUpperCase())).toEqual(place);
      }
    }
    expect(pageKey()).not.toBe(pageKey());
    expect(placeOfHistoryId(historyId({ page: '3fffffffffffffff', ms: 5, index: 7 }))).toEqual({ page: '3fffffffffffffff', ms: 5, index: 7 });
  });

  it("sort as their pages' times do", () => {
    const times = [1_700_000_000_000, 1_700_000_000_001, 1_700_000_100_000, 1_800_000_000_000];
    const ids = times.map((ms) => historyId({ page: pageKey(), ms, index: 0 }));
    expect([...ids].sort()).toEqual(ids);
  });

  it('are told from an async query id (version 4)', () => {
    for (let i = 0; i < 100; i++) expect(placeOfHistoryId(randomUUID())).toBeUndefined();
    expect(placeOfHistoryId('not an id')).toBeUndefined();
  });
});

const entriesOf = (page: Page) => entriesOfBody(page.body.json());

describe('paginate', () => {
  it('makes a page per user and key, entries in submission order, counting failures and cancels', () => {
    const pages = paginate([entry('a', 'k1', 30), entry('b', 'k1', 10), entry('a', 'k1', 20, 'failed'), entry('a', 'k2', 5, 'cancelled'), entry('a', 'k1', 25, 'failed')]);
    expect(pages.map((p) => [p.user, p.keyId, p.firstAt, p.lastAt, p.failed, p.cancelled, entriesOf(p).map((e) => e![3])])).toEqual([
      ['a', 'k1', 20, 30, 2, 0, [20, 25, 30]],
      ['a', 'k2', 5, 5, 0, 1, [5]],
      ['b', 'k1', 10, 10, 0, 0, [10]],
    ]);
    expect(new Set(pages.map((p) => p.key)).size).toBe(3);
  });

  it('cuts a page at 1,000 entries', () => {
    const many = Array.from({ length: 2_500 }, (_, i) => entry('a', 'k', 1_000 + i));
    expect(paginate(many).map((p) => [p.body.size, p.firstAt, p.lastAt])).toEqual([
      [1_000, 1_000, 1_999],
      [1_000, 2_000, 2_999],
      [500, 3_000, 3_499],
    ]);
  });

  it('keeps the beginning of a very long statement, marked cut', () => {
    const long = { ...entry('a', 'k', 1), queryString: 'x'.repeat(70_000) };
    const [page] = paginate([long]);
    const [text, truncated] = entriesOf(page!)[0]!;
    expect(text).toHaveLength(65_536);
    expect(truncated).toBe(true);
  });

  it('keeps each distinct text of a page once, and times as small numbers after the page\'s first', () => {
    const rows = [1, 2, 3, 4].map((t) => ({ ...entry('a', 'k', 1_800_000_000_000 + t), queryString: t % 2 ? 'SELECT 1' : 'SELECT 2' }));
    const [page] = paginate(rows);
    const stored = JSON.parse(page!.body.json()) as { since: number; texts: string[]; entries: unknown[][] };
    expect(stored.since).toBe(1_800_000_000_001);
    expect(stored.texts).toEqual(['SELECT 1', 'SELECT 2']);
    expect(stored.entries.map((e) => [e[0], e[3], e[4]])).toEqual([[0, 0, 2], [1, 1, 2], [0, 2, 2], [1, 3, 2]]);
    expect(entriesOf(page!)).toEqual(rows.map((r) => [r.queryString, false, 'succeeded', r.submittedAt, r.finishedAt, 1, 'SELECT', null]));
  });

  it('reads a page written before texts were kept once (a list of entries with their texts)', () => {
    const old = [['SELECT 1', false, 'succeeded', 5, 7, 1, 'SELECT', null], null];
    expect(entriesOfBody(JSON.stringify(old))).toEqual(old);
  });
});
