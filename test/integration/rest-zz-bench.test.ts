import { execFile } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRest, type RestServer } from '../helpers/rest.js';
let srv: RestServer;
beforeAll(async () => { srv = await startRest({ config: { rateLimitMax: 10_000_000 } }); });
afterAll(async () => { await srv?.stop(); });
it('bench', { timeout: 120_000 }, async () => {
  const alice = await srv.user('alice');
  for (const [label, body] of [['select 1', { query_string: 'SELECT 1' }]] as const) {
    const out = await new Promise<string>((resolve) => execFile('/tmp/ac/node_modules/.bin/autocannon', ['-c', '16', '-d', '10', '-m', 'POST', '-H', `authorization=Bearer ${alice.key}`, '-H', 'content-type=application/json', '-b', JSON.stringify(body), `${srv.url}/api/v1beta/query/`], (_e, so, se) => resolve(so + se)));
    console.log(label, out);
  }
  expect(1).toBe(1);
});
