/**
 * Results stream: rows are written as they arrive, in constant memory, in JSON, NDJSON or CSV;
 * a failure after the first rows still ends the answer in a way a client cannot take for success.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let alice: { name: string; key: string };

beforeAll(async () => {
  srv = await startRest();
  alice = await srv.user('alice');
});

afterAll(async () => {
  await srv?.stop();
});

function post(sql: string, accept?: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${srv.url}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json', ...(accept && { accept }) },
    body: JSON.stringify({ query_string: sql }),
    signal,
  });
}

describe('a 1,000,000-row result', () => {
  it('streams in JSON with flat memory', { timeout: 120_000 }, async () => {
    const sql = "SELECT g, 'x' || g FROM generate_series(1,1000000) g";
    await (await post('SELECT g FROM generate_series(1, 20000) g')).text(); // warm up code paths and pools
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    const started = Date.now();
    let brackets = 0;
    let bytes = 0;
    let head = '';
    let tail = '';
    try {
      const res = await post(sql);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) {
        const text = decoder.decode(chunk as Uint8Array, { stream: true });
        bytes += text.length;
        if (head.length < 200) head += text.slice(0, 200);
        tail = (tail + text).slice(-200);
        for (let i = text.indexOf('['); i >= 0; i = text.indexOf('[', i + 1)) brackets++;
      }
    } finally {
      clearInterval(sampler);
    }
    const seconds = (Date.now() - started) / 1000;
    const growthMb = (peak - baseline) / 1024 / 1024;
    console.log(`1,000,000 rows: ${(bytes / 1024 / 1024).toFixed(1)} MB of JSON in ${seconds.toFixed(1)} s; RSS growth ${growthMb.toFixed(1)} MB`);
    expect(head.startsWith(`{"query_string":${JSON.stringify(sql)},"fields":{"g":"INTEGER","?column?":"TEXT"},"data":[[1,"x1"],[2,"x2"]`)).toBe(true);
    expect(tail.endsWith('[999999,"x999999"],[1000000,"x1000000"]],"command":"SELECT","row_count":1000000}\n')).toBe(true);
    expect(brackets).toBe(1 + 1_000_000); // the data array and one per row
    expect(growthMb).toBeLessThan(100);
  });
});

describe('statements returning rows other than SELECT', () => {
  it('INSERT … RETURNING over several batches answers every row with the tag\'s count; SHOW counts its rows', async () => {
    await post(`CREATE SCHEMA "${alice.name}/ret"`);
    await post(`CREATE TABLE "${alice.name}/ret".t (id int)`);
    const r = (await (await post(`INSERT INTO "${alice.name}/ret".t SELECT generate_series(1, 2500) RETURNING id`)).json()) as { data: number[][]; command: string; row_count: number };
    expect(r.command).toBe('INSERT');
    expect(r.row_count).toBe(2500);
    expect(r.data).toHaveLength(2500);
    expect(r.data.at(-1)).toEqual([2500]);
    expect(await (await post('SHOW search_path')).json()).toMatchObject({ fields: { search_path: 'TEXT' }, data: [['public']], command: 'SHOW', row_count: 1 });
  });
});

describe('formats', () => {
  const sql = "SELECT 1 AS n, 'a,b' AS t, NULL::text AS z, '' AS e, true AS b, 9007199254740993::int8 AS big UNION ALL SELECT 2, 'say \"hi\"', 'x', 'y', false, 0";

  it('NDJSON: fields line, one array per row, closing line', async () => {
    const res = await post(sql, 'application/x-ndjson');
    expect(res.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    const lines = (await res.text()).split('\n');
    expect(lines).toEqual([
      JSON.stringify({ query_string: sql, fields: { n: 'INTEGER', t: 'TEXT', z: 'TEXT', e: 'TEXT', b: 'BOOLEAN', big: 'BIGINT' } }),
      '[1,"a,b",null,"",true,9007199254740993]',
      '[2,"say \\"hi\\"","x","y",false,0]',
      '{"command":"SELECT","row_count":2}',
      '',
    ]);
  });

  it('CSV: header, Postgres text values, NULL empty and "" for the empty string', async () => {
    const res = await post(sql, 'text/csv');
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(await res.text()).toBe('n,t,z,e,b,big\r\n1,"a,b",,"",t,9007199254740993\r\n2,"say ""hi""",x,y,f,0\r\n');
  });
});

describe('a failure after rows were sent', () => {
  // Row 200,000 divides by zero: the first batches are on their way before it fails (an error
  // Postgres reports before the first batch is complete gets its own status instead).
  const failing = 'SELECT g, 1 / (200000 - g) AS r FROM generate_series(1, 300000) g';

  it('ends the JSON answer with an "error" member (status already 200)', async () => {
    const res = await post(failing);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: unknown[][]; error: { code: string; message: string }; command?: string };
    expect(body.error).toMatchObject({ code: '22012', message: 'division by zero' });
    expect(body.data.length).toBeGreaterThan(0);
    expect(body.data.length).toBeLessThan(200000);
    expect(body.command).toBeUndefined();
  });

  it('ends NDJSON with an error line', async () => {
    const lines = (await (await post(failing, 'application/x-ndjson')).text()).trim().split('\n');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ error: { code: '22012' } });
    expect(lines.length).toBeGreaterThan(2);
  });

  it('cuts a CSV answer so that it cannot pass for complete', async () => {
    const res = await post(failing, 'text/csv');
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it('fails with a proper status when it fails before the first row', async () => {
    const res = await post('SELECT 1 / (g - 1) FROM generate_series(1, 5000) g');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('22012');
  });
});

describe('a client that goes away mid-answer', () => {
  it('frees its statement and connection', { timeout: 60_000 }, async () => {
    const abort = new AbortController();
    const res = await post("SELECT g, repeat('x', 100) FROM generate_series(1, 5000000) g", undefined, abort.signal);
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await reader.read().catch(() => undefined);
    // The portal is closed and the backend idle again, well before the 5,000,000 rows were made.
    await expect
      .poll(
        async () => {
          const r = await srv.cluster.admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1 AND state <> 'idle'", [alice.name]);
          return Number(r.rows[0]?.n);
        },
        { timeout: 10_000, interval: 100 },
      )
      .toBe(0);
    const after = await (await post('SELECT 42 AS answer')).json();
    expect(after).toMatchObject({ data: [[42]] });
  });
});
