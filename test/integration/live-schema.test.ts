/**
 * Live schema events: a schema change made by any path (psql over the wire, POST /query/, a DO
 * block) reaches the open `GET /events` streams of everyone who may read the repo at that moment,
 * and no one else's; with a Bearer key or the console's session cookie; a closed stream is
 * unsubscribed.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { openSchemaStreams } from '../../src/http/live-schema.js';

interface SchemaEvent {
  repo: string;
  table: string | null;
  command: string;
}

/** An open event stream, parsed as it arrives. */
interface Stream {
  /** The raw text so far. */
  text: string;
  events: SchemaEvent[];
  headers: Headers;
  /** Resolves with the first event matching `match` among those received from index `from` on (default: from now on). */
  next(match: (e: SchemaEvent) => boolean, from?: number): Promise<SchemaEvent>;
  close(): void;
}

let svc: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let carol: { name: string; key: string };
let repo: string;
const streams: Stream[] = [];

function api(path: string, init: { method?: string; key?: string; cookie?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${svc.httpUrl}/api/v1beta${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.key !== undefined && { authorization: `Bearer ${init.key}` }),
      ...(init.cookie !== undefined && { cookie: init.cookie }),
      ...(init.body !== undefined && { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
}

async function query(key: string, sql: string): Promise<void> {
  const res = await api('/query/', { method: 'POST', key, body: { query_string: sql } });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.text();
}

/** psql's path: a statement over the Postgres wire protocol with the user's key. */
async function overWire(user: { name: string; key: string }, sql: string): Promise<void> {
  const client = new pg.Client(svc.pgOptions(user.name, user.key));
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function openStream(auth: { key?: string; cookie?: string }): Promise<Stream> {
  const abort = new AbortController();
  const res = await fetch(`${svc.httpUrl}/api/v1beta/events`, {
    headers: { accept: 'text/event-stream', ...(auth.key && { authorization: `Bearer ${auth.key}` }), ...(auth.cookie && { cookie: auth.cookie }) },
    signal: abort.signal,
  });
  expect(res.status).toBe(200);
  const waiters = new Set<() => void>();
  const stream: Stream = {
    text: '',
    events: [],
    headers: res.headers,
    next: (match, from = stream.events.length) =>
      new Promise((resolve) => {
        const check = () => {
          const found = stream.events.slice(from).find(match);
          if (!found) return;
          waiters.delete(check);
          resolve(found);
        };
        waiters.add(check);
        check();
      }),
    close: () => abort.abort(),
  };
  void (async () => {
    const decoder = new TextDecoder();
    let pending = '';
    try {
      for await (const chunk of res.body!) {
        const text = decoder.decode(chunk as Uint8Array, { stream: true });
        stream.text += text;
        pending += text;
        // Messages end with a blank line.
        for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
          const message = pending.slice(0, end);
          pending = pending.slice(end + 2);
          const lines = message.split('\n');
          if (!lines.includes('event: schema')) continue;
          const data = lines.find((l) => l.startsWith('data: '));
          stream.events.push(JSON.parse(data!.slice('data: '.length)) as SchemaEvent);
          for (const w of [...waiters]) w();
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  streams.push(stream);
  return stream;
}

/** `promise`, or a failure after `ms`. */
function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms))]);
}

beforeAll(async () => {
  svc = await startTestService();
  [alice, bob, carol] = await Promise.all([svc.user('alice'), svc.user('bob'), svc.user('carol')]);
  repo = `${alice.name}/sales`;
  expect((await api('/repos/', { method: 'POST', key: alice.key, body: { name: 'sales' } })).status).toBe(201);
  await query(alice.key, `CREATE TABLE "${repo}"."Orders 2024" (id int)`);
  expect((await api(`/repos/${repo}/collaborators/${bob.name}`, { method: 'PUT', key: alice.key, body: { permission: 'read' } })).status).toBe(200);
});

afterAll(async () => {
  for (const s of streams) s.close();
  await svc?.stop();
});

describe('GET /events', () => {
  let a: Stream;
  let b: Stream;
  let c: Stream;

  beforeAll(async () => {
    [a, b, c] = await Promise.all([openStream({ key: alice.key }), openStream({ key: bob.key }), openStream({ key: carol.key })]);
  });

  it('answers an event stream that is neither cached nor buffered, starting with the retry interval', async () => {
    expect(a.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(a.headers.get('cache-control')).toContain('no-cache');
    expect(a.headers.get('x-accel-buffering')).toBe('no');
    await expect.poll(() => a.text).toMatch(/^retry: 1000\n\n/);
  });

  /** Runs `change` and expects the event at alice and bob within 2 s. */
  async function seen(change: () => Promise<void>, expected: SchemaEvent): Promise<void> {
    const from = [a.events.length, b.events.length];
    const match = (e: SchemaEvent) => e.repo === expected.repo && e.table === expected.table && e.command === expected.command;
    const since = Date.now();
    await change();
    await within(2_000, a.next(match, from[0]), `event ${JSON.stringify(expected)} at alice`);
    await within(2_000, b.next(match, from[1]), `event ${JSON.stringify(expected)} at bob`);
    expect(Date.now() - since).toBeLessThan(2_000);
  }

  it('tells owner and reader of a column added over the wire', async () => {
    await seen(() => overWire(alice, `ALTER TABLE "${repo}"."Orders 2024" ADD COLUMN note text`), { repo, table: 'Orders 2024', command: 'ALTER TABLE' });
  });

  it('tells of a table created by a DO block through POST /query/', async () => {
    await seen(() => query(alice.key, `DO $$ BEGIN EXECUTE 'CREATE TABLE "${repo}".made_in_do (a int)'; END $$`), { repo, table: 'made_in_do', command: 'CREATE TABLE' });
  });

  it('tells of a rename, with the new name', async () => {
    await seen(() => overWire(alice, `ALTER TABLE "${repo}".made_in_do RENAME TO renamed`), { repo, table: 'renamed', command: 'ALTER TABLE' });
  });

  it('tells of a dropped table', async () => {
    await seen(() => query(alice.key, `DROP TABLE "${repo}".renamed`), { repo, table: 'renamed', command: 'DROP TABLE' });
  });

  it('sends each change once, and nothing to someone who cannot read the repo', async () => {
    const count = (s: Stream) => s.events.filter((e) => e.repo === repo).length;
    const before = [count(a), count(b)];
    await seen(() => query(alice.key, `CREATE TABLE "${repo}".once (id serial PRIMARY KEY, v text)`), { repo, table: 'once', command: 'CREATE TABLE' });
    await new Promise((r) => setTimeout(r, 300));
    // The table, its sequence and its index are one event.
    expect([count(a), count(b)]).toEqual([before[0]! + 1, before[1]! + 1]);
    expect(c.events).toEqual([]);
    expect(c.text).toMatch(/^retry: 1000\n\n$/);
  });

  it("ignores changes outside repos, and tells carol of her own repo's changes", async () => {
    const own = `${carol.name}/notes`;
    expect((await api('/repos/', { method: 'POST', key: carol.key, body: { name: 'notes' } })).status).toBe(201);
    await within(2_000, c.next((e) => e.repo === own && e.command === 'CREATE SCHEMA', 0), 'CREATE SCHEMA at carol');
    await overWire(carol, 'CREATE TEMP TABLE scratch (a int)');
    await query(carol.key, `CREATE TABLE "${own}".n (a int)`);
    const event = await within(2_000, c.next((e) => e.table === 'n', 0), 'CREATE TABLE at carol');
    expect(event).toEqual({ repo: own, table: 'n', command: 'CREATE TABLE' });
    expect(c.events.map((e) => e.repo)).toEqual([own, own]); // no event for the temporary table
    expect(a.events.some((e) => e.repo === own)).toBe(false);
  });

  it('stops telling bob once he is no longer a collaborator', async () => {
    expect((await api(`/repos/${repo}/collaborators/${bob.name}`, { method: 'DELETE', key: alice.key })).status).toBe(204);
    const fromBob = b.events.length;
    const fromAlice = a.events.length;
    await overWire(alice, `ALTER TABLE "${repo}"."Orders 2024" ADD COLUMN after_revoke int`);
    await within(2_000, a.next((e) => e.table === 'Orders 2024', fromAlice), 'event at alice');
    await new Promise((r) => setTimeout(r, 300));
    expect(b.events.slice(fromBob)).toEqual([]);
  });
});

describe('the console', () => {
  it("streams with the session cookie, and closing the stream frees its subscription", async () => {
    const name = `dave_${alice.name.slice('alice_'.length)}`;
    const signup = await api('/auth/signup', { method: 'POST', body: { username: name, password: 'correct horse battery staple' } });
    expect(signup.status).toBe(201);
    const cookie = signup.headers.getSetCookie().find((c) => c.startsWith('rb_session='))!.split(';')[0]!;
    const before = openSchemaStreams();
    const d = await openStream({ cookie });
    expect(openSchemaStreams()).toBe(before + 1);
    await svc.control.createRepo(`${name}/board`);
    const event = await within(2_000, d.next((e) => e.repo === `${name}/board`, 0), 'event at the console');
    expect(event).toEqual({ repo: `${name}/board`, table: null, command: 'CREATE SCHEMA' });
    d.close();
    await expect.poll(() => openSchemaStreams(), { timeout: 2_000 }).toBe(before);
  });

  it('refuses a request without a key or cookie', async () => {
    const res = await api('/events');
    expect(res.status).toBe(401);
  });
});
