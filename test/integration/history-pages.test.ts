/**
 * The query history's pages against a real Postgres: pages written by several processes overlap in
 * time, yet every listing (any limit, any status, one key's or all) equals the whole history
 * sorted newest first; an entry is found and deleted by its id alone, by its owner only; a user
 * deleted meanwhile takes no page; a page keeps each text once, forgets a deleted entry's text, and
 * pages written before texts were kept once are still read.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEntry, insertEntries, listEntries, newestFirst, removeEntry, type HistoryEntry } from '../../src/control/history-pages.js';
import type { QueryOwner, QueryRecord, QueryStatus } from '../../src/control/query-records.js';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
beforeAll(async () => {
  srv = await startRest();
}, 120_000);
afterAll(() => srv?.stop());

const STATUSES = ['succeeded', 'failed', 'cancelled'] as const;

/** 1,200 requests of two keys over an hour, recorded by three "processes" whose batches overlap in time. */
function history(user: string): HistoryEntry[] {
  const start = Date.UTC(2026, 10, 28, 12);
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647);
  return Array.from({ length: 1_200 }, (_, i) => {
    const submittedAt = start + i * 3_000 + (next() % 90_000);
    return {
      user,
      keyId: next() % 4 === 0 ? 'scoped' : 'full',
      queryString: `SELECT ${i}`,
      submittedAt,
      finishedAt: submittedAt + (next() % 500),
      status: STATUSES[next() % 7 === 0 ? 1 : next() % 11 === 0 ? 2 : 0]!,
      command: 'SELECT',
      rowCount: i,
      error: null,
    };
  });
}

const shape = (r: QueryRecord) => [r.queryString, r.keyId, r.status, r.submittedAt.getTime(), r.rowCount];
const expected = (all: HistoryEntry[], owner: QueryOwner, status: QueryStatus | undefined, limit: number) =>
  all
    .filter((e) => (owner.keyId === null || e.keyId === owner.keyId) && (status === undefined || e.status === status))
    .map((e) => ({ queryString: e.queryString, keyId: e.keyId, status: e.status, submittedAt: new Date(e.submittedAt), rowCount: e.rowCount, id: '' }) as QueryRecord)
    .sort(newestFirst)
    .slice(0, limit)
    .map(shape);

describe('the history in pages', () => {
  it('lists exactly the newest entries, whatever the limit, status and key, across overlapping pages', async () => {
    const { name } = await srv.user('pager');
    const all = history(name);
    // Three processes, each writing every third request in batches of ~60: pages overlap.
    for (let p = 0; p < 3; p++) {
      const mine = all.filter((_, i) => i % 3 === p);
      for (let b = 0; b < mine.length; b += 60) await insertEntries(srv.control.admin, mine.slice(b, b + 60));
    }
    for (const keyId of [null, 'scoped']) {
      for (const status of [undefined, ...STATUSES]) {
        for (const limit of [1, 7, 100, 2_000]) {
          const got = await listEntries(srv.control.admin, { user: name, keyId }, { status, limit });
          expect(got.map(shape), `${keyId} ${status} ${limit}`).toEqual(expected(all, { user: name, keyId }, status, limit));
        }
      }
    }
    expect(await listEntries(srv.control.admin, { user: name, keyId: null }, { status: 'running', limit: 10 })).toEqual([]);
  });

  it('finds and deletes an entry by its id, for its owner (and its key) only', async () => {
    const { name } = await srv.user('finder');
    const other = await srv.user('other');
    await insertEntries(srv.control.admin, history(name).slice(0, 300));
    const owner = { user: name, keyId: null };
    const listed = await listEntries(srv.control.admin, owner, { limit: 300 });
    const some = [listed[0]!, listed[150]!, listed[299]!];
    for (const r of some) {
      expect(await getEntry(srv.control.admin, r.id, owner)).toEqual(r);
      expect(await getEntry(srv.control.admin, r.id, { user: other.name, keyId: null })).toBeUndefined();
      const otherKey = r.keyId === 'full' ? 'scoped' : 'full';
      expect(await getEntry(srv.control.admin, r.id, { user: name, keyId: otherKey })).toBeUndefined();
      expect(await removeEntry(srv.control.admin, r.id, { user: other.name, keyId: null })).toBe(false);
    }
    expect(await removeEntry(srv.control.admin, some[1]!.id, owner)).toBe(true);
    expect(await getEntry(srv.control.admin, some[1]!.id, owner)).toBeUndefined();
    expect(await removeEntry(srv.control.admin, some[1]!.id, owner)).toBe(false);
    const after = await listEntries(srv.control.admin, owner, { limit: 300 });
    expect(after.map((r) => r.id)).toEqual(listed.filter((r) => r.id !== some[1]!.id).map((r) => r.id));
  });

  it('skips the entries of a user deleted before they were written', async () => {
    const { name } = await srv.user('gone');
    const kept = await srv.user('kept');
    await srv.control.admin.query('DELETE FROM _repobase.users WHERE name = $1', [name]);
    await insertEntries(srv.control.admin, [...history(name).slice(0, 5), ...history(kept.name).slice(0, 5)]);
    const { rows } = await srv.control.admin.query<{ user_name: string; n: number }>(
      'SELECT user_name, sum(entries)::int AS n FROM _repobase.history_pages WHERE user_name = ANY($1) GROUP BY 1',
      [[name, kept.name]],
    );
    expect(rows).toEqual([{ user_name: kept.name, n: 5 }]);
  });

  it('keeps a text once per page and forgets a deleted entry\'s; reads pages written with a text per entry', async () => {
    const { name } = await srv.user('texts');
    const owner = { user: name, keyId: null };
    const rows = history(name).slice(0, 6).map((e, i) => ({ ...e, keyId: 'full', queryString: i === 5 ? 'SELECT secret' : 'SELECT same' }));
    await insertEntries(srv.control.admin, rows);
    const texts = async () => {
      const { rows: pages } = await srv.control.admin.query<{ body: Buffer }>('SELECT body FROM _repobase.history_pages WHERE user_name = $1', [name]);
      return pages.map((p) => (JSON.parse(inflateRawSync(p.body).toString('utf8')) as { texts: string[] }).texts);
    };
    expect(await texts()).toEqual([['SELECT same', 'SELECT secret']]);
    const secret = (await listEntries(srv.control.admin, owner, { limit: 10 })).find((r) => r.queryString === 'SELECT secret')!;
    expect(await removeEntry(srv.control.admin, secret.id, owner)).toBe(true);
    expect(await texts()).toEqual([['SELECT same']]);
    expect((await listEntries(srv.control.admin, owner, { limit: 10 })).map((r) => r.queryString)).toEqual(Array(5).fill('SELECT same'));

    // A page as the build before wrote it: a list of entries, each with its own text.
    const at = Date.UTC(2026, 10, 29, 1);
    const old = [['SELECT old', false, 'succeeded', at, at + 5, 1, 'SELECT', null], null, ['SELECT bad', false, 'failed', at + 10, at + 11, null, null, { code: '42601', message: 'syntax error' }]];
    await srv.control.admin.query(
      `INSERT INTO _repobase.history_pages (id, user_name, key_id, first_at, last_at, entries, failed, cancelled, body)
       VALUES (42, $1, 'full', to_timestamp($2 / 1000.0), to_timestamp($3 / 1000.0), 2, 1, 0, $4)`,
      [name, at, at + 10, deflateRawSync(JSON.stringify(old))],
    );
    const listed = await listEntries(srv.control.admin, owner, { limit: 10 });
    const read = listed.filter((r) => r.queryString.endsWith('old') || r.queryString.endsWith('bad')).map((r) => [r.queryString, r.status, r.submittedAt.getTime(), r.rowCount, r.error]);
    expect(read).toEqual([
      ['SELECT bad', 'failed', at + 10, null, { code: '42601', message: 'syntax error' }],
      ['SELECT old', 'succeeded', at, 1, null],
    ]);
    const bad = listed.find((r) => r.queryString === 'SELECT bad')!;
    expect(await getEntry(srv.control.admin, bad.id, owner)).toEqual(bad);
    expect(await removeEntry(srv.control.admin, bad.id, owner)).toBe(true);
    expect((await listEntries(srv.control.admin, owner, { limit: 10 })).filter((r) => r.queryString.endsWith('old') || r.queryString.endsWith('bad')).map((r) => r.queryString)).toEqual(['SELECT old']);
  });
});
