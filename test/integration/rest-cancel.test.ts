/**
 * REST queries are cancelled in Postgres when their client goes away (before the answer, or while
 * rows stream) and when `POST /query/<id>/cancel` names them; the session then serves the next
 * query as before. What runs is read from pg_stat_activity as the admin sees it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let admin: pg.Client;
let alice: { name: string; key: string };
let bob: { name: string; key: string };

beforeAll(async () => {
  svc = await startTestService();
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
  alice = await svc.user('alice');
  bob = await svc.user('bob');
});

afterAll(async () => {
  await admin?.end();
  await svc?.stop();
});

function post(key: string, sql: string, opts: { accept?: string; queryId?: string; signal?: AbortSignal } = {}): Promise<Response> {
  return fetch(`${svc.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(opts.accept && { accept: opts.accept }),
      ...(opts.queryId && { 'x-query-id': opts.queryId }),
    },
    body: JSON.stringify({ query_string: sql }),
    signal: opts.signal,
  });
}

function cancel(key: string, id: string): Promise<Response> {
  return fetch(`${svc.httpUrl}/api/v1beta/query/${encodeURIComponent(id)}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
}

/** Backends of `user` running a statement whose text contains `marker`. */
async function running(user: string, marker: string): Promise<number[]> {
  const res = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND strpos(query, $2) > 0 AND pid <> pg_backend_pid()",
    [user, marker],
  );
  return res.rows.map((r) => r.pid);
}

/** Waits until `user` runs a statement containing `marker`; returns its backend. */
async function started(user: string, marker: string): Promise<number> {
  await expect.poll(() => running(user, marker), { timeout: 5_000, interval: 20 }).toHaveLength(1);
  return (await running(user, marker))[0]!;
}

/** Asserts that the statement is gone from pg_stat_activity within a second. */
async function goneWithinASecond(user: string, marker: string): Promise<void> {
  const since = Date.now();
  await expect.poll(() => running(user, marker), { timeout: 1_000, interval: 20 }).toEqual([]);
  expect(Date.now() - since).toBeLessThan(1_000);
}

/** The state of backend `pid` (`active`, `idle`…), or undefined once it is gone. */
async function stateOf(pid: number): Promise<string | undefined> {
  const res = await admin.query<{ state: string }>('SELECT state FROM pg_stat_activity WHERE pid = $1', [pid]);
  return res.rows[0]?.state;
}

async function backendPid(key: string): Promise<number> {
  const res = await post(key, 'SELECT pg_backend_pid() AS pid');
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: number[][] }).data[0]![0]!;
}

describe('a client that goes away', () => {
  it('cancels its statement before the answer started', async () => {
    const marker = 'pg_sleep(30) /* gone-before */';
    const abort = new AbortController();
    const req = post(alice.key, `SELECT ${marker}`, { signal: abort.signal });
    await started(alice.name, marker);
    await new Promise((r) => setTimeout(r, 300));
    abort.abort();
    await expect(req).rejects.toThrow();
    await goneWithinASecond(alice.name, marker);
  });

  it('cancels its statement while rows stream (NDJSON), and the session serves the next query', async () => {
    const before = await backendPid(alice.key);
    // The first rows come at once (the answer starts), then one every 10 ms.
    const marker = 'pg_sleep(CASE WHEN g > 3000 THEN 0.01 ELSE 0 END) /* gone-streaming */';
    const abort = new AbortController();
    const res = await post(alice.key, `SELECT g, ${marker} FROM generate_series(1, 100000) g`, { accept: 'application/x-ndjson', signal: abort.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    while (text.split('\n').length < 100) text += new TextDecoder().decode((await reader.read()).value);
    expect(text.startsWith('{"query_string":')).toBe(true);
    expect(await running(alice.name, 'gone-streaming')).toEqual([before]);
    abort.abort();
    await goneWithinASecond(alice.name, 'gone-streaming');
    // The session was drained back to idle, not closed: its backend is still there, and the
    // user's next query works.
    await expect.poll(() => stateOf(before), { timeout: 1_000, interval: 20 }).toBe('idle');
    expect(typeof (await backendPid(alice.key))).toBe('number');
  });
});

describe('POST /query/<id>/cancel', () => {
  it('cancels the query sent with that X-Query-Id: it answers 57014 as Postgres says it', async () => {
    const marker = 'pg_sleep(30) /* explicit */';
    const answer = post(alice.key, `SELECT ${marker}`, { queryId: 'q-explicit_1' });
    await started(alice.name, marker);
    const since = Date.now();
    const res = await cancel(alice.key, 'q-explicit_1');
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    const done = await answer;
    expect(Date.now() - since).toBeLessThan(1_000);
    const body = (await done.json()) as { error: { code: string; message: string }; query_string: string };
    expect(body.error).toMatchObject({ code: '57014', message: 'canceling statement due to user request' });
    expect(body.query_string).toBe(`SELECT ${marker}`);
    expect(done.status).toBe(504); // the status of 57014 (errors.ts), the same as a statement timeout
    await goneWithinASecond(alice.name, marker);
  });

  it('ends a streaming answer with the error line (NDJSON)', async () => {
    const marker = 'pg_sleep(CASE WHEN g > 3000 THEN 0.01 ELSE 0 END) /* explicit-streaming */';
    const res = await post(alice.key, `SELECT g, ${marker} FROM generate_series(1, 100000) g`, { accept: 'application/x-ndjson', queryId: 'streaming' });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first.startsWith('{"query_string":')).toBe(true);
    expect((await cancel(alice.key, 'streaming')).status).toBe(204);
    let text = first;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
    const last = JSON.parse(text.trimEnd().split('\n').at(-1)!) as { error?: { code: string; message: string } };
    expect(last.error).toMatchObject({ code: '57014', message: 'canceling statement due to user request' });
    await goneWithinASecond(alice.name, 'explicit-streaming');
  });

  it("answers 404 for another user's query, which goes on running, and for an unknown id", async () => {
    const marker = 'pg_sleep(30) /* not-yours */';
    const answer = post(alice.key, `SELECT ${marker}`, { queryId: 'mine' });
    const pid = await started(alice.name, marker);
    const res = await cancel(bob.key, 'mine');
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: '42704', message: 'no running query with id "mine"' });
    expect((await cancel(alice.key, 'no-such-query')).status).toBe(404);
    await new Promise((r) => setTimeout(r, 300));
    expect(await running(alice.name, marker)).toEqual([pid]);
    expect((await cancel(alice.key, 'mine')).status).toBe(204);
    expect(((await (await answer).json()) as { error: { code: string } }).error.code).toBe('57014');
  });

  it('refuses a malformed X-Query-Id and a malformed id', async () => {
    const res = await post(alice.key, 'SELECT 1', { queryId: 'has space' });
    expect(res.status).toBe(400);
    expect((await cancel(alice.key, 'x'.repeat(65))).status).toBe(400);
  });

  it("leaves the user's session clean: the next query works on the same backend, with no setting carried over", async () => {
    const before = await backendPid(alice.key);
    const marker = 'pg_sleep(30) /* then-next */';
    const answer = post(alice.key, `SELECT set_config('application_name', 'leaked', false), ${marker}`, { queryId: 'then-next' });
    await started(alice.name, marker);
    expect((await cancel(alice.key, 'then-next')).status).toBe(204);
    expect((await answer).status).toBe(504);
    expect(await backendPid(alice.key)).toBe(before);
    const res = await post(alice.key, "SELECT current_setting('application_name') AS app, 1 + 1 AS two");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: unknown[][] };
    expect(body.data[0]![0]).not.toBe('leaked');
    expect(body.data[0]![1]).toBe(2);
  });
});
