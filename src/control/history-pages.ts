/**
 * The query history's store: `POST /query/` requests kept as *pages*, one row per user and key per
 * write (up to PAGE_ENTRIES entries), their entries one JSON text compressed (raw deflate, level 1,
 * off the event loop). A request so costs the control plane a share of one row, not a row with its
 * indexes: the history is read far less often than it is written (measured in
 * bench/notes/2026-11-28-rest-history.md).
 *
 * An entry's id is a version-7 UUID made of its page's time (48 bits), its place in the page (12
 * bits) and its page's random key (62 bits): the id alone finds it, and it is never taken for an
 * async query's id (version 4, query-records.ts). A deleted entry leaves a null in its place, so
 * the places of the others hold.
 */
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { deflateRaw, inflateRaw } from 'node:zlib';
import type pg from 'pg';
import { inTransaction, query, type Queryable } from './db.js';
import { CONTROL_SCHEMA } from './migration-list.js';
import type { ErrorJson, QueryOwner, QueryRecord, QueryStatus } from './query-records.js';

/** One finished `POST /query/`. Times are `Date.now()` values (no Date made per request). */
export interface HistoryEntry {
  user: string;
  keyId: string;
  queryString: string;
  submittedAt: number;
  finishedAt: number;
  status: 'succeeded' | 'failed' | 'cancelled';
  command: string | null;
  rowCount: number | null;
  error: ErrorJson | null;
}

/** Statements longer than this are kept cut (and marked so): the history is for reading, not for replaying scripts. */
export const HISTORY_SQL_MAX_CHARS = 65_536;
/** Entries of one page at most (its place in the page is 12 bits of an id). */
const PAGE_ENTRIES = 1_000;

const PAGES = `${CONTROL_SCHEMA}.history_pages`;
const deflate = promisify(deflateRaw);
const inflate = promisify(inflateRaw);

/** An entry as read: [query_string, truncated, status, submitted_at ms, finished_at ms, row_count, command, error]; null once deleted. */
export type Entry = [string, boolean, HistoryEntry['status'], number, number, number | null, string | null, ErrorJson | null];

/**
 * An entry as a page's body keeps it: its text by place in the page's `texts`, its submission in
 * ms after the page's `since` and its end in ms after that (small integers, where times since 1970
 * cost JSON a float's digits each).
 */
type Stored = [number, boolean, HistoryEntry['status'], number, number, number | null, string | null, ErrorJson | null];
interface StoredBody {
  since: number;
  texts: string[];
  entries: (Stored | null)[];
}

/** Where an entry is: its page's key (62 bits, as 16 hex digits), its page's time, its place in the page. */
export interface EntryPlace {
  page: string;
  ms: number;
  index: number;
}

/** A page's key: 62 random bits, as 16 hex digits (the first one 0–3). */
export function pageKey(): string {
  const bytes = randomBytes(8);
  bytes[0]! &= 0x3f;
  return bytes.toString('hex');
}

/** The id of the entry at `place`: tttttttt-tttt-7iii-Vppp-pppppppppppp (V: the variant's 2 bits, then the key's first 2). */
export function historyId({ page, ms, index }: EntryPlace): string {
  const time = ms.toString(16).padStart(12, '0');
  const variant = (8 | parseInt(page[0]!, 16)).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8)}-7${index.toString(16).padStart(3, '0')}-${variant}${page.slice(1, 4)}-${page.slice(4)}`;
}

/** Where the history entry `id` is, or undefined for an id of another kind (an async query's). */
export function placeOfHistoryId(id: string): EntryPlace | undefined {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(id)) return undefined;
  const lower = id.toLowerCase();
  return {
    page: (parseInt(lower[19]!, 16) & 3).toString(16) + lower.slice(20, 23) + lower.slice(24),
    ms: parseInt(lower.slice(0, 8) + lower.slice(9, 13), 16),
    index: parseInt(lower.slice(15, 18), 16),
  };
}

/**
 * A page's body being written: each distinct statement text once (an app or a dashboard sends the
 * same few texts again and again), then the entries, naming theirs by place. One JSON text.
 */
export class PageBody {
  private readonly texts: string[] = [];
  private readonly places = new Map<string, number>();
  private readonly entries: (Stored | null)[] = [];

  constructor(private readonly since: number) {}

  get size(): number {
    return this.entries.length;
  }

  add(text: string, truncated: boolean, status: HistoryEntry['status'], submittedAt: number, finishedAt: number, rowCount: number | null, command: string | null, error: ErrorJson | null): void {
    let place = this.places.get(text);
    if (place === undefined) {
      place = this.texts.push(text) - 1;
      this.places.set(text, place);
    }
    this.entries.push([place, truncated, status, submittedAt - this.since, finishedAt - submittedAt, rowCount, command, error]);
  }

  /** A deleted entry's place, kept so that the others keep theirs. */
  addDeleted(): void {
    this.entries.push(null);
  }

  json(): string {
    const body: StoredBody = { since: this.since, texts: this.texts, entries: this.entries };
    return JSON.stringify(body);
  }
}

/** The entries of a page's body (`json()`'s text, or a list of entries as pages were written before texts were kept once). */
export function entriesOfBody(json: string): (Entry | null)[] {
  const read = JSON.parse(json) as StoredBody | (Entry | null)[];
  if (Array.isArray(read)) return read;
  return read.entries.map((s) => {
    if (s === null) return null;
    const submittedAt = read.since + s[3];
    return [read.texts[s[0]]!, s[1], s[2], submittedAt, submittedAt + s[4], s[5], s[6], s[7]];
  });
}

export interface Page {
  key: string;
  user: string;
  keyId: string;
  firstAt: number;
  lastAt: number;
  failed: number;
  cancelled: number;
  body: PageBody;
}

/**
 * `rows` grouped into pages: by user and key, in submission order, PAGE_ENTRIES at most. Rows of
 * one user and key mostly come together: the group of the row before is tried first.
 */
export function paginate(rows: readonly HistoryEntry[]): Page[] {
  const groups = new Map<string, Map<string, HistoryEntry[]>>();
  let last: HistoryEntry | undefined;
  let group: HistoryEntry[] = [];
  for (const r of rows) {
    if (last === undefined || r.user !== last.user || r.keyId !== last.keyId) {
      let byKey = groups.get(r.user);
      if (byKey === undefined) groups.set(r.user, (byKey = new Map()));
      const known = byKey.get(r.keyId);
      if (known === undefined) byKey.set(r.keyId, (group = []));
      else group = known;
      last = r;
    }
    group.push(r);
  }
  const pages: Page[] = [];
  for (const byKey of groups.values()) for (const entries of byKey.values()) paginateGroup(entries, pages);
  return pages;
}

function paginateGroup(group: HistoryEntry[], pages: Page[]): void {
  group.sort((a, b) => a.submittedAt - b.submittedAt);
  let page: Page | undefined;
  for (const e of group) {
    if (!page || page.body.size >= PAGE_ENTRIES) {
      page = { key: pageKey(), user: e.user, keyId: e.keyId, firstAt: e.submittedAt, lastAt: e.submittedAt, failed: 0, cancelled: 0, body: new PageBody(e.submittedAt) };
      pages.push(page);
    }
    const long = e.queryString.length > HISTORY_SQL_MAX_CHARS;
    page.body.add(long ? e.queryString.slice(0, HISTORY_SQL_MAX_CHARS) : e.queryString, long, e.status, e.submittedAt, e.finishedAt, e.rowCount, e.command, e.error);
    page.lastAt = e.submittedAt;
    if (e.status === 'failed') page.failed++;
    else if (e.status === 'cancelled') page.cancelled++;
  }
}

/** A page's key as its row's bigint id (text, as pg reads and writes bigints), and back. */
const keyToId = (key: string): string => BigInt(`0x${key}`).toString();
const idToKey = (id: string): string => BigInt(id).toString(16).padStart(16, '0');

/**
 * Writes `rows` as pages (one INSERT); entries of a user deleted meanwhile are skipped. Committed
 * without waiting for the WAL's flush (`synchronous_commit` off for this transaction alone): the
 * history is a record of what ran, not data, and a crash of Postgres may lose its last fraction of
 * a second; the flush per write cost Postgres about a third of what the history did
 * (bench/notes/2026-11-28-rest-history.md).
 */
export async function insertEntries(pool: pg.Pool, rows: readonly HistoryEntry[]): Promise<void> {
  const pages = paginate(rows);
  // JSON writes a NUL as \u0000; compressed here, off the event loop, so Postgres stores the bytes as they come.
  const bodies = await Promise.all(pages.map((p) => deflate(p.body.json(), { level: 1 })));
  await inTransaction(pool, async (tx) => {
    await query(tx, 'SET LOCAL synchronous_commit = off');
    await insertPages(tx, pages, bodies);
  });
}

async function insertPages(db: Queryable, pages: readonly Page[], bodies: readonly Buffer[]): Promise<void> {
  const values: unknown[] = [];
  const tuples = pages.map((p, i) => {
    const n = values.push(keyToId(p.key), p.user, p.keyId, p.firstAt, p.lastAt, p.body.size, p.failed, p.cancelled, bodies[i]);
    const at = (k: number) => `$${n - k}`;
    return `(${at(8)}::bigint, ${at(7)}::text, ${at(6)}::text, ${at(5)}::float8, ${at(4)}::float8, ${at(3)}::int, ${at(2)}::int, ${at(1)}::int, ${at(0)}::bytea)`;
  });
  await query(
    db,
    `INSERT INTO ${PAGES} (id, user_name, key_id, first_at, last_at, entries, failed, cancelled, body)
     SELECT v.id, v.user_name, v.key_id, to_timestamp(v.first_ms / 1000), to_timestamp(v.last_ms / 1000), v.entries, v.failed, v.cancelled, v.body
       FROM (VALUES ${tuples.join(', ')}) AS v(id, user_name, key_id, first_ms, last_ms, entries, failed, cancelled, body)
       JOIN ${CONTROL_SCHEMA}.users u ON u.name = v.user_name`,
    values,
  );
}

interface PageRow {
  id: string;
  key_id: string;
  first_at: Date;
  body: Buffer;
}

const PAGE_COLUMNS = 'id, key_id, first_at, body';

async function entriesOf(body: Buffer): Promise<(Entry | null)[]> {
  return entriesOfBody((await inflate(body)).toString('utf8'));
}

/** The entries of a page as records, in their places (null where one was deleted). */
async function recordsOf(user: string, row: PageRow): Promise<(QueryRecord | null)[]> {
  const page = idToKey(row.id);
  const ms = row.first_at.getTime();
  return (await entriesOf(row.body)).map((s, index) => s && toRecord(user, row.key_id, historyId({ page, ms, index }), s));
}

function toRecord(user: string, keyId: string, id: string, s: Entry): QueryRecord {
  const [queryString, queryTruncated, status, submittedAt, finishedAt, rowCount, command, error] = s;
  return {
    id,
    user,
    keyId,
    async: false,
    queryString,
    queryTruncated,
    status,
    submittedAt: new Date(submittedAt),
    startedAt: new Date(submittedAt),
    finishedAt: new Date(finishedAt),
    rowCount,
    command,
    fields: null,
    error,
    rowsStored: 0,
    resultBytes: 0,
    runner: null,
  };
}

/** The page of the entry `id` of `owner` (none for another user's or key's), and the entry's place. */
async function pageOf(db: Queryable, id: string, owner: QueryOwner, lock: boolean): Promise<{ row: PageRow; place: EntryPlace } | undefined> {
  const place = placeOfHistoryId(id);
  if (place === undefined) return undefined;
  const res = await query<PageRow>(
    db,
    `SELECT ${PAGE_COLUMNS} FROM ${PAGES} WHERE id = $3 AND user_name = $1 AND ($2::text IS NULL OR key_id = $2) ${lock ? 'FOR UPDATE' : ''}`,
    [owner.user, owner.keyId, keyToId(place.page)],
  );
  const row = res.rows[0];
  return row && row.first_at.getTime() === place.ms ? { row, place } : undefined;
}

/** The history entry `id` of `owner`, or undefined. */
export async function getEntry(db: Queryable, id: string, owner: QueryOwner): Promise<QueryRecord | undefined> {
  const found = await pageOf(db, id, owner, false);
  if (!found) return undefined;
  return (await recordsOf(owner.user, found.row))[found.place.index] ?? undefined;
}

/** Deletes the history entry `id` of `owner` (a null left in its place); whether there was one. */
export async function removeEntry(pool: pg.Pool, id: string, owner: QueryOwner): Promise<boolean> {
  if (placeOfHistoryId(id) === undefined) return false;
  return inTransaction(pool, async (tx) => {
    const found = await pageOf(tx, id, owner, true);
    if (!found) return false;
    const entries = await entriesOf(found.row.body);
    if (!entries[found.place.index]) return false;
    entries[found.place.index] = null;
    const left = entries.filter((s) => s !== null);
    if (left.length === 0) {
      await query(tx, `DELETE FROM ${PAGES} WHERE id = $1`, [found.row.id]);
      return true;
    }
    const count = (status: QueryStatus) => left.filter((s) => s[2] === status).length;
    await query(tx, `UPDATE ${PAGES} SET body = $2, entries = $3, failed = $4, cancelled = $5 WHERE id = $1`, [
      found.row.id,
      await deflate(bodyOf(found.row.first_at.getTime(), entries).json(), { level: 1 }),
      left.length,
      count('failed'),
      count('cancelled'),
    ]);
    return true;
  });
}

/** A page's entries written afresh: a text no entry names any more is gone from it. */
function bodyOf(since: number, entries: readonly (Entry | null)[]): PageBody {
  const body = new PageBody(since);
  for (const s of entries) {
    if (s === null) body.addDeleted();
    else body.add(...s);
  }
  return body;
}

/** Which pages can hold entries of `status`. */
function pagesWith(status: QueryStatus | undefined): string {
  switch (status) {
    case undefined:
      return 'true';
    case 'failed':
      return 'failed > 0';
    case 'cancelled':
      return 'cancelled > 0';
    case 'succeeded':
      return 'entries > failed + cancelled';
    default:
      return 'false'; // the history holds only ended requests
  }
}

/**
 * `owner`'s newest `limit` history entries (of `status` when given), newest first. Pages are read
 * newest first by their last entry's time until every entry newer than the pages not yet read
 * makes `limit`: an entry submitted at t lies in a page whose `last_at` ≥ t.
 */
export async function listEntries(db: Queryable, owner: QueryOwner, filter: { status?: QueryStatus | undefined; limit: number }): Promise<QueryRecord[]> {
  const found: QueryRecord[] = [];
  const where = `user_name = $1 AND ${owner.keyId === null ? '$2::text IS NULL' : 'key_id = $2'} AND ${pagesWith(filter.status)}`;
  let before: { at: Date; id: string } | null = null;
  for (let batch = 4; ; batch = Math.min(batch * 4, 256)) {
    const res: pg.QueryResult<PageRow & { last_at: Date }> = await query(
      db,
      `SELECT ${PAGE_COLUMNS}, last_at FROM ${PAGES}
        WHERE ${where} AND ($3::timestamptz IS NULL OR (last_at, id) < ($3, $4::bigint))
        ORDER BY last_at DESC, id DESC LIMIT $5`,
      [owner.user, owner.keyId, before?.at ?? null, before?.id ?? null, batch],
    );
    for (const row of res.rows) {
      for (const r of await recordsOf(owner.user, row)) if (r && (filter.status === undefined || r.status === filter.status)) found.push(r);
    }
    const last = res.rows.at(-1);
    if (res.rows.length < batch || !last) break;
    before = { at: last.last_at, id: last.id };
    const unread = last.last_at.getTime();
    if (found.filter((r) => r.submittedAt.getTime() > unread).length >= filter.limit) break;
  }
  return found.sort(newestFirst).slice(0, filter.limit);
}

/** Newest submission first; ties by id, as the async queries are listed. */
export function newestFirst(a: QueryRecord, b: QueryRecord): number {
  return b.submittedAt.getTime() - a.submittedAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The history retention: pages whose newest entry is more than `days` old. */
export async function deleteOldEntries(db: Queryable, days: number): Promise<number> {
  const res = await query<{ n: number }>(
    db,
    `WITH gone AS (DELETE FROM ${PAGES} WHERE last_at < now() - make_interval(days => $1) RETURNING entries) SELECT coalesce(sum(entries), 0)::int AS n FROM gone`,
    [days],
  );
  return res.rows[0]?.n ?? 0;
}
