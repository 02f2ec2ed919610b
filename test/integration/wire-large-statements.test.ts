/**
 * Statements of many megabytes over the wire, as ORMs and pandas send them: a 64 MiB
 * `INSERT … VALUES` from node-postgres passes and every row lands; one byte over the limit is
 * refused with 54000 and the connection goes on; a row naming another user's repo deep inside a
 * large statement is still found; ten clients sending large statements at once wait in line for
 * the budget of large messages and all get through.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let client: pg.Client;

const MiB = 1024 * 1024;

/** `INSERT INTO big … VALUES` of `bytes` bytes exactly, `rowBytes` a row. */
function insert(bytes: number, rowBytes: number, last = ''): { sql: string; rows: number } {
  const head = 'INSERT INTO big (id, note) VALUES ';
  const pad = (n: number) => 'x'.repeat(Math.max(0, n));
  const parts: string[] = [];
  let size = head.length + last.length;
  let id = 0;
  while (size + rowBytes + 2 < bytes) {
    const row = `(${id++}, '${pad(rowBytes - 20)}')`;
    parts.push(row);
    size += row.length + 2;
  }
  const rest = `(${id++}, '${pad(bytes - size - 12 - String(id).length)}')`;
  parts.push(rest);
  const sql = head + parts.join(', ') + last;
  return { sql: sql + ' '.repeat(Math.max(0, bytes - Buffer.byteLength(sql))), rows: id };
}

beforeAll(async () => {
  // A budget of 24 MiB for large messages: 64 MiB goes through alone, 8 MiB ones three at a time.
  svc = await startTestService({ pgLargeMessagesBytes: 24 * MiB });
  [alice, bob] = await Promise.all([svc.user('alice'), svc.user('bob')]);
  await svc.control.createRepo({ owner: alice.name, repo: 'data' });
  await svc.control.createRepo({ owner: bob.name, repo: 'secret' });
  client = new pg.Client(svc.pgOptions(alice.name, alice.key, `${alice.name}/data`));
  client.on('error', () => undefined);
  await client.connect();
  await client.query('CREATE TABLE big (id int, note text)');
}, 60_000);

afterAll(async () => {
  await client?.end().catch(() => undefined);
  await svc.stop();
});

describe('large statements', () => {
  it('a 64 MiB INSERT … VALUES from node-postgres passes, every row in', async () => {
    const { sql, rows } = insert(64 * MiB, 3000);
    expect(Buffer.byteLength(sql)).toBe(64 * MiB);
    const r = await client.query(sql);
    expect(r.rowCount).toBe(rows);
    expect((await client.query('SELECT count(*)::int AS n, sum(length(note))::bigint AS chars FROM big')).rows[0].n).toBe(rows);
  }, 120_000);

  it('one byte over the limit is 54000, and the connection goes on', async () => {
    const { sql } = insert(64 * MiB + 1, 3000);
    await expect(client.query(sql)).rejects.toMatchObject({ code: '54000' });
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  }, 120_000);

  it('a row naming another user\'s repo behind a megabyte of constant rows is refused', async () => {
    const { sql } = insert(2 * MiB, 1000, `, ((SELECT count(*)::int FROM "${bob.name}/secret".t), 'x')`);
    await expect(client.query(sql)).rejects.toMatchObject({ code: '42501', message: `permission denied for repo "${bob.name}/secret"` });
  }, 60_000);

  it('ten clients with an 8 MiB statement each at once: all pass, in line for the budget', async () => {
    const clients = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const c = new pg.Client(svc.pgOptions(alice.name, alice.key, `${alice.name}/data`));
        await c.connect();
        return c;
      }),
    );
    try {
      const before = Number((await client.query('SELECT count(*) AS n FROM big')).rows[0].n);
      const { sql, rows } = insert(8 * MiB, 2000);
      const counts = await Promise.all(clients.map(async (c) => (await c.query(sql)).rowCount));
      expect(counts).toEqual(Array.from({ length: 10 }, () => rows));
      expect(Number((await client.query('SELECT count(*) AS n FROM big')).rows[0].n)).toBe(before + 10 * rows);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  }, 120_000);
});
