/**
 * REST async queries, run with the `rest` scenario on the service as shipped:
 *
 * - a one-row select (the `rest` scenario's) as an async query, one client, one query after the
 *   other: `POST /query/` with `"async": true`, `GET /queries/<id>` until it succeeded, then
 *   `GET /queries/<id>/result` — and the same with `"wait_ms"`, one request answered as without
 *   async. Latency per query (p50, p99) and requests per query;
 * - a 1,000,000-row result: the time to store it (submit until succeeded), then read in pages of
 *   100,000 rows, against the same result answered whole by `POST /query/`: MB/s of JSON read by
 *   the client, per round.
 */
import { REPO, type BenchEnv } from '../env.js';
import { percentile, summarize, type Summary } from '../lib/stats.js';

export interface RestAsyncResult {
  oneRow: { queries: number; p50Ms: number; p99Ms: number; requestsPerQuery: number; waitP50Ms: number; waitP99Ms: number };
  bigResult: { rows: number; mb: number; storeS: Summary; pagedMBps: Summary; syncMBps: Summary };
}

export interface RestAsyncOptions {
  rounds: number;
  /** One-row async queries measured (after 10% as many unrecorded). */
  queries: number;
  /** Rows of the large result. */
  rows: number;
}

const ONE_ROW = `SELECT abalance FROM "${REPO}".pgbench_accounts WHERE aid = 4242`;
const PAGE_ROWS = 100_000;

type Call = (method: string, path: string, body?: unknown) => Promise<Response>;

function client(env: BenchEnv): Call {
  return (method, path, body) =>
    fetch(`${env.repobase.httpUrl}/api/v1beta${path}`, {
      method,
      headers: { authorization: `Bearer ${env.repobase.key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
}

async function ok(res: Response, what: string): Promise<Response> {
  if (res.status >= 300) throw new Error(`${what}: HTTP ${res.status} ${await res.text()}`);
  return res;
}

/** Submits `sql` and polls it until it ended; returns its id and the requests it took. */
async function runToEnd(call: Call, sql: string, pollMs: number): Promise<{ id: string; requests: number }> {
  const { id } = (await (await ok(await call('POST', '/query/', { query_string: sql, async: true }), 'submit')).json()) as { id: string };
  for (let requests = 2; ; requests++) {
    const q = (await (await ok(await call('GET', `/queries/${id}`), 'poll')).json()) as { status: string; error: unknown };
    if (q.status === 'succeeded') return { id, requests };
    if (q.status !== 'queued' && q.status !== 'running') throw new Error(`async query ${q.status}: ${JSON.stringify(q.error)}`);
    if (pollMs > 0) await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** The one-row query `n` times: submit + poll + fetch, and `wait_ms`; latencies sorted. */
async function oneRow(call: Call, n: number): Promise<{ polled: number[]; waited: number[]; requests: number }> {
  const polled: number[] = [];
  const waited: number[] = [];
  let requests = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const { id, requests: r } = await runToEnd(call, ONE_ROW, 0);
    await (await ok(await call('GET', `/queries/${id}/result`), 'fetch')).text();
    polled.push(performance.now() - t0);
    requests += r + 1;
    const t1 = performance.now();
    await (await ok(await call('POST', '/query/', { query_string: ONE_ROW, async: true, wait_ms: 10_000 }), 'wait_ms')).text();
    waited.push(performance.now() - t1);
  }
  return { polled: polled.sort((a, b) => a - b), waited: waited.sort((a, b) => a - b), requests: requests / n };
}

/** Reads a whole answer; its bytes. */
async function bytesOf(res: Response): Promise<number> {
  let bytes = 0;
  for await (const chunk of res.body ?? []) bytes += (chunk as Uint8Array).byteLength;
  return bytes;
}

export async function runRestAsync(env: BenchEnv, opts: RestAsyncOptions, log: (s: string) => void): Promise<RestAsyncResult> {
  const call = client(env);
  await oneRow(call, Math.max(1, Math.round(opts.queries / 10))); // warm-up, unrecorded
  const { polled, waited, requests } = await oneRow(call, opts.queries);
  log(`REST async one-row: submit + poll + fetch p50 ${percentile(polled, 50).toFixed(2)} ms (${requests.toFixed(1)} requests), wait_ms p50 ${percentile(waited, 50).toFixed(2)} ms`);

  const big = `SELECT g AS id, md5(g::text) AS digest, g * 0.01 AS amount FROM generate_series(1, ${opts.rows}) g`;
  const store: number[] = [];
  const paged: number[] = [];
  const sync: number[] = [];
  let mb = 0;
  for (let round = 0; round < opts.rounds; round++) {
    const t0 = performance.now();
    const { id } = await runToEnd(call, big, 50);
    store.push((performance.now() - t0) / 1000);
    const t1 = performance.now();
    let bytes = 0;
    for (let offset = 0; offset < opts.rows; offset += PAGE_ROWS) bytes += await bytesOf(await ok(await call('GET', `/queries/${id}/result?offset=${offset}&limit=${PAGE_ROWS}`), 'page'));
    paged.push(bytes / 1e6 / ((performance.now() - t1) / 1000));
    await call('DELETE', `/queries/${id}`);
    const t2 = performance.now();
    const whole = await bytesOf(await ok(await call('POST', '/query/', { query_string: big }), 'POST /query/'));
    sync.push(whole / 1e6 / ((performance.now() - t2) / 1000));
    mb = whole / 1e6;
    log(`REST async ${opts.rows.toLocaleString('en')} rows round ${round + 1}: stored in ${store.at(-1)!.toFixed(1)} s, pages ${paged.at(-1)!.toFixed(0)} MB/s, POST /query/ ${sync.at(-1)!.toFixed(0)} MB/s`);
  }
  return {
    oneRow: { queries: opts.queries, p50Ms: percentile(polled, 50), p99Ms: percentile(polled, 99), requestsPerQuery: requests, waitP50Ms: percentile(waited, 50), waitP99Ms: percentile(waited, 99) },
    bigResult: { rows: opts.rows, mb, storeS: summarize(store), pagedMBps: summarize(paged), syncMBps: summarize(sync) },
  };
}

/** The report's lines. */
export function restAsyncLines(r: RestAsyncResult, fmt: (n: number, digits?: number) => string): string[] {
  const b = r.bigResult;
  return [
    '| REST async (1 client, the service as shipped) | p50 ms | p99 ms | requests per query |',
    '|---|---|---|---|',
    `| one-row select: submit + poll + fetch (${fmt(r.oneRow.queries)} queries) | ${fmt(r.oneRow.p50Ms, 2)} | ${fmt(r.oneRow.p99Ms, 2)} | ${fmt(r.oneRow.requestsPerQuery, 1)} |`,
    `| one-row select: submit with wait_ms | ${fmt(r.oneRow.waitP50Ms, 2)} | ${fmt(r.oneRow.waitP99Ms, 2)} | 1 |`,
    '',
    `| ${fmt(b.rows)}-row result (${fmt(b.mb, 1)} MB of JSON) | stored in s | read MB/s | spread |`,
    '|---|---|---|---|',
    `| async: pages of ${fmt(PAGE_ROWS)} rows | ${fmt(b.storeS.median, 1)} | ${fmt(b.pagedMBps.median)} | ${fmt(b.pagedMBps.spreadPct)}% |`,
    `| POST /query/, whole | n/a | ${fmt(b.syncMBps.median)} | ${fmt(b.syncMBps.spreadPct)}% |`,
  ];
}
