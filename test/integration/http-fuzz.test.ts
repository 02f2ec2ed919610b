/**
 * Hostile bodies on the REST API: malformed and deeply nested JSON, bodies at the size limit,
 * wrong content types and broken multipart uploads. Each must be a 4xx with the error JSON shape
 * — never a 500, never a hang — and the service must keep answering.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

const BODY_LIMIT = 1024 * 1024;
let svc: TestService;
let key: string;

beforeAll(async () => {
  svc = await startTestService({ httpBodyLimitBytes: BODY_LIMIT, importMaxBytes: 1024 * 1024, rateLimitMax: 100_000 });
  ({ key } = await svc.user('httpfuzz'));
});

afterAll(async () => {
  await svc.stop();
});

interface Answer {
  status: number;
  body: unknown;
}

/** POSTs `body` with `contentType`; a 10 s abort turns a hang into a failure. */
async function post(path: string, body: string | Buffer, contentType: string | undefined): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (contentType !== undefined) headers['content-type'] = contentType;
  const r = await fetch(`${svc.httpUrl}/api/v1beta${path}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // kept as text: the shape assertion below then fails with the body in view
  }
  return { status: r.status, body: parsed };
}

/** A 4xx with `{"error":{"code":<SQLSTATE>,"message",…}}`. */
function expectRefused(answer: Answer, status?: number): string {
  if (status !== undefined) expect(answer.status).toBe(status);
  expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBeGreaterThanOrEqual(400);
  expect(answer.status).toBeLessThan(500);
  expect(answer.body).toMatchObject({ error: { code: expect.stringMatching(/^[0-9A-Z]{5}$/) as unknown, message: expect.any(String) as unknown } });
  return (answer.body as { error: { code: string } }).error.code;
}

async function stillServing(): Promise<void> {
  const r = await post('/query/', JSON.stringify({ query_string: 'SELECT 1 AS ok' }), 'application/json');
  expect(r.status).toBe(200);
}

describe('JSON bodies', () => {
  it('malformed JSON is 400 22P02', async () => {
    for (const body of ['{', '{"query_string":', '{"query_string": "SELECT 1",}', 'nul', '"\\ud800', '{"a":1}}', '\u0000', '[1,2', '{"query_string":"\\x41"}']) {
      expect(expectRefused(await post('/query/', body, 'application/json'), 400)).toBe('22P02');
    }
    await stillServing();
  });

  it('arbitrary bytes as JSON never make a 500', async () => {
    const bodies = fc.sample(fc.oneof(fc.string({ maxLength: 200 }), fc.json().map((j) => j.slice(0, -1)), fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a).toString('latin1'))), { seed: 7, numRuns: 150 });
    for (const body of bodies) {
      const answer = await post('/query/', body, 'application/json');
      if (answer.status !== 200) expectRefused(answer);
    }
    await stillServing();
  });

  it('a body just under the limit is read; just over is 413 54000', async () => {
    const frame = (n: number) => JSON.stringify({ query_string: `SELECT '${'x'.repeat(n)}' AS s` }).length;
    const under = BODY_LIMIT - frame(0) - 10;
    const ok = await post('/query/', JSON.stringify({ query_string: `SELECT '${'x'.repeat(under)}' AS s` }), 'application/json');
    // Read and parsed: whatever the statement-size limit says of it, it is not a body-size refusal.
    if (ok.status !== 200) {
      expectRefused(ok);
      expect((ok.body as { error: { message: string } }).error.message).not.toBe('request body too large');
    }
    expect(expectRefused(await post('/query/', JSON.stringify({ query_string: `SELECT '${'x'.repeat(BODY_LIMIT)}'` }), 'application/json'), 413)).toBe('54000');
    await stillServing();
  });

  it('10^5 levels of nesting: parsed or refused, never a stack overflow', async () => {
    const depth = 100_000;
    // Nested arrays beside a valid request: parsed, the unknown field ignored, the query run.
    const arrays = await post('/query/', `{"query_string":"SELECT 1 AS ok","x":${'['.repeat(depth)}${']'.repeat(depth)}}`, 'application/json');
    expect(arrays.status === 200 ? arrays.body : expectRefused(arrays)).toMatchObject(arrays.status === 200 ? { data: [[1]] } : {});
    // Nested objects with no query_string: a validation error, 400 22023.
    expect(expectRefused(await post('/query/', `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`, 'application/json'), 400)).toBe('22023');
    // Never closed: not JSON, 400 22P02.
    expect(expectRefused(await post('/query/', '['.repeat(depth), 'application/json'), 400)).toBe('22P02');
    await stillServing();
  });

  it('wrong content types are 4xx', async () => {
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream', undefined]) {
      expectRefused(await post('/query/', '{"query_string":"SELECT 1"}', type));
    }
    await stillServing();
  });
});

describe('multipart uploads to /import/ and /import/preview', () => {
  const boundary = 'fuzzboundary';
  const type = `multipart/form-data; boundary=${boundary}`;
  const filePart = (content: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\n${content}\r\n`;

  const broken: [string, string | Buffer, string | undefined][] = [
    ['truncated before the closing boundary', filePart('a,b\n1,2\n'), type],
    ['truncated inside the part headers', `--${boundary}\r\nContent-Disposition: form-da`, type],
    ['no closing boundary and no headers end', `--${boundary}\r\n${'x'.repeat(1000)}`, type],
    ['a huge part header', `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${'a'.repeat(200_000)}.csv"\r\n\r\n1\r\n--${boundary}--\r\n`, type],
    ['many huge header lines', `--${boundary}\r\n${`X-Fuzz: ${'b'.repeat(8000)}\r\n`.repeat(30)}\r\n1\r\n--${boundary}--\r\n`, type],
    ['missing file part', `--${boundary}\r\nContent-Disposition: form-data; name="repo"\r\n\r\nx/y\r\n--${boundary}--\r\n`, type],
    ['file part under another name', `--${boundary}\r\nContent-Disposition: form-data; name="upload"; filename="a.csv"\r\n\r\na\n1\n\r\n--${boundary}--\r\n`, type],
    ['empty body', '', type],
    ['no boundary parameter', filePart('a\n1\n') + `--${boundary}--\r\n`, 'multipart/form-data'],
    ['wrong boundary', filePart('a\n1\n') + `--${boundary}--\r\n`, 'multipart/form-data; boundary=other'],
    ['not multipart at all', 'a,b\n1,2\n', 'text/csv'],
    ['JSON instead of a form', '{"file":"a,b"}', 'application/json'],
    ['binary garbage', Buffer.from(fc.sample(fc.uint8Array({ minLength: 500, maxLength: 500 }), { seed: 3, numRuns: 1 })[0]!), type],
  ];

  for (const path of ['/import/preview', '/import/']) {
    it.each(broken)(`${path}: %s is a 4xx`, async (_name, body, contentType) => {
      expectRefused(await post(`${path}?repo=nobody/none&table=t`, body, contentType));
    });
  }

  it('random damage to a valid upload never makes a 500, and the service keeps answering', async () => {
    const valid = Buffer.from(`${filePart('a,b\n1,2\n3,4\n')}--${boundary}--\r\n`);
    const damaged = fc.sample(
      fc.tuple(fc.nat({ max: valid.length }), fc.nat({ max: valid.length }), fc.integer({ min: 0, max: 255 })).map(([cut, at, byte]) => {
        const copy = Buffer.from(valid.subarray(0, Math.max(cut, 1)));
        if (at < copy.length) copy[at] = byte;
        return copy;
      }),
      { seed: 11, numRuns: 60 },
    );
    for (const body of damaged) {
      const answer = await post('/import/preview', body, type);
      if (answer.status !== 200) expectRefused(answer);
    }
    await stillServing();
  });
});
