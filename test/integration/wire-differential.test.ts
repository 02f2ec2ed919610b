/**
 * Differential: one scenario run directly against Postgres (as the user's own role) and again
 * through repobase must give the same rows and the same SQLSTATEs — the proxy is invisible to
 * a user working in their own repos, errors included.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolePassword } from '../../src/upstream/roles.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };

type Outcome = { rows: unknown[][]; command: string | null; fields: string[] } | { code: string; message: string; position?: string };

async function outcome(client: pg.Client, sql: string, values?: unknown[]): Promise<Outcome> {
  try {
    const res = await client.query({ text: sql, values, rowMode: 'array' });
    const last = Array.isArray(res) ? res[res.length - 1] : res;
    return { rows: last.rows as unknown[][], command: last.command, fields: last.fields.map((f: { name: string }) => f.name) };
  } catch (err: unknown) {
    const e = err as { code: string; message: string; position?: string };
    return { code: e.code, message: e.message, ...(e.position !== undefined && { position: e.position }) };
  }
}

/** The scenario: each step with optional parameters. Table names are per-run (two runs, one repo each). */
const scenario = (repo: string): [string, unknown[]?][] => [
  [`SET search_path = "${repo}"`],
  ['CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), tags text[], meta jsonb)'],
  ["INSERT INTO items VALUES (1, 'apple', 1.25, '{red,fruit}', '{\"k\": 1}'), (2, 'pear', 2.5, NULL, NULL)"],
  ['INSERT INTO items VALUES ($1, $2, $3, $4, $5)', [3, 'fig', '9.99', ['dried'], { k: [1, 2] }]],
  ['SELECT * FROM items ORDER BY id'],
  ['SELECT name, price * 2 AS double, tags[1], meta->>\'k\' FROM items WHERE id > $1 ORDER BY id', [0]],
  ["INSERT INTO items VALUES (1, 'dup', 0, NULL, NULL)"],
  ['INSERT INTO items (id) VALUES (9)'],
  ['SELECT 1/0'],
  ["SELECT 'abc'::int"],
  ['SELECT * FROM missing_table'],
  ['SELEC 1'],
  ['SELECT 1 FROM items WHERE'],
  ['UPDATE items SET price = price + 1 WHERE id = 2 RETURNING id, price'],
  ['BEGIN'],
  ["INSERT INTO items VALUES (10, 'ten', 10, NULL, NULL)"],
  ['SELECT count(*) FROM items'],
  ['ROLLBACK'],
  ['SELECT count(*) FROM items'],
  ['ALTER TABLE items ADD COLUMN ok boolean'],
  ['UPDATE items SET ok = price > 2'],
  ['SELECT id, ok FROM items ORDER BY id'],
  ['DELETE FROM items WHERE id = 3'],
  ['SELECT id FROM items ORDER BY id'],
  ['WITH t AS (SELECT id FROM items) SELECT count(*) FROM t'],
  ['SELECT generate_series(1, 3), now() IS NOT NULL'],
  ['DROP TABLE items'],
];

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'direct' });
  await svc.control.createRepo({ owner: alice.name, repo: 'proxied' });
});

afterAll(async () => {
  await svc.stop();
});

describe('direct Postgres and repobase give the same answers', () => {
  it('rows, command tags, error SQLSTATEs, messages and positions', async () => {
    const url = new URL(svc.config.upstreamUrl);
    const direct = new pg.Client({ host: url.hostname, port: Number(url.port), database: url.pathname.slice(1), user: alice.name, password: rolePassword(svc.config.secret, alice.name) });
    const proxied = new pg.Client(svc.pgOptions(alice.name, alice.key));
    await direct.connect();
    await proxied.connect();
    try {
      const a = scenario(`${alice.name}/direct`);
      const b = scenario(`${alice.name}/proxied`);
      for (let i = 0; i < a.length; i++) {
        const [sqlA, values] = a[i]!;
        const [sqlB] = b[i]!;
        const want = await outcome(direct, sqlA, values);
        const got = await outcome(proxied, sqlB, values);
        expect(got, sqlB).toEqual(want);
      }
    } finally {
      await direct.end();
      await proxied.end();
    }
  });
});
