/**
 * A repo backed up and restored through the wire with Debian's PostgreSQL 15 client tools, against
 * a PostgreSQL 15 upstream (pg_dump refuses a server newer than itself): `pg_dump -n` restored
 * with `psql -f`, and `pg_dump -Fc` of the user's whole view restored with
 * `pg_restore --clean --if-exists --no-owner`. Everything a repo can hold comes back identical (a
 * second dump equals the first), and a dump names nothing of another user's private repo.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCitus, type CitusCluster } from '../../bench/lib/citus.js';
import { startServiceOn } from '../helpers/faults.js';
import type { TestService } from '../helpers/service.js';

const exec = promisify(execFile);

let node: CitusCluster;
let svc: TestService;
let dir: string;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let carol: { name: string; key: string };
let reader: { id: string; key: string };

const url = (who: { name: string; key: string }, database = 'repobase') => svc.pgUrl(who.name, who.key, database, 'sslmode=disable');

async function tool(cmd: string, ...args: string[]): Promise<string> {
  const { stdout } = await exec(cmd, args, { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/**
 * A plain-SQL dump of the repo, without the random key of psql's \restrict lines, and with each
 * run of GRANT lines in one order: a restore gives the repo's keys their grants when it makes the
 * repo, ahead of its collaborators', so an object's grants may come back in another order.
 */
async function dumpRepo(): Promise<string> {
  const file = join(dir, `dump-${Date.now()}.sql`);
  await tool('pg_dump', url(alice), '-n', `"${alice.name}/shop"`, '-f', file);
  const text = (await readFile(file, 'utf8')).replace(/^\\(un)?restrict .*$/gm, '');
  return text.replace(/(?:^GRANT .*\n)+/gm, (run) => run.split('\n').filter(Boolean).sort().join('\n') + '\n');
}

beforeAll(async () => {
  node = await startCitus({ citus: false });
  svc = await startServiceOn(node.url());
  dir = await mkdtemp(join(tmpdir(), 'repobase-dump-'));
  [alice, bob, carol] = await Promise.all([svc.user('alice'), svc.user('bob'), svc.user('carol')]);
  await svc.control.createRepo({ owner: alice.name, repo: 'shop' });
  await svc.control.createRepo({ owner: carol.name, repo: 'hidden' });
  const c = new pg.Client(svc.pgOptions(carol.name, carol.key, `${carol.name}/hidden`));
  c.on('error', () => undefined);
  await c.connect();
  await c.query("CREATE TABLE hidden_payroll (x int); COMMENT ON TABLE hidden_payroll IS 'hidden_comment'");
  await c.end();
  const a = new pg.Client(svc.pgOptions(alice.name, alice.key, `${alice.name}/shop`));
  a.on('error', () => undefined);
  await a.connect();
  await a.query(`
    CREATE TYPE mood AS ENUM ('sad', 'happy');
    CREATE TYPE pair AS (a int, b text);
    CREATE TABLE customers (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL DEFAULT 'anon', m mood, CHECK (length(name) < 100));
    CREATE TABLE orders (id serial PRIMARY KEY, customer bigint REFERENCES customers(id), amount numeric(10,2) DEFAULT 0, p pair, made timestamptz DEFAULT now());
    CREATE INDEX orders_amount ON orders (amount) WHERE amount > 0;
    CREATE VIEW big AS SELECT * FROM orders WHERE amount > 40;
    CREATE FUNCTION total() RETURNS numeric LANGUAGE sql AS $$ SELECT sum(amount) FROM orders $$;
    CREATE FUNCTION bump(x int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN x + 1; END $$;
    COMMENT ON TABLE orders IS 'all orders';
    COMMENT ON COLUMN orders.amount IS 'in euros';
    INSERT INTO customers (name, m) VALUES ('ann', 'happy'), ('bo', 'sad');
    INSERT INTO orders (customer, amount, p) SELECT 1 + g % 2, g, ROW(g, 'x' || g)::pair FROM generate_series(1, 50) g;
    SELECT nextval('orders_id_seq');
  `);
  await a.end();
  await svc.control.setCollaborator({ owner: alice.name, repo: 'shop' }, bob.name, 'read');
  // Keys for the repo: their roles' grants are in a dump too, and must not stop its restore.
  reader = await svc.control.keys.create(alice.name, { name: 'dash', repos: [`${alice.name}/shop`], access: 'read' });
  await svc.control.keys.create(alice.name, { name: 'etl', repos: [`${alice.name}/shop`], access: 'write' });
}, 120_000);

afterAll(async () => {
  await svc?.stop();
  await node?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('pg_dump of a repo', () => {
  it('dumps everything the repo holds, and nothing of another user\'s private repo', async () => {
    const dump = await dumpRepo();
    for (const expected of [
      `CREATE TYPE "${alice.name}/shop".mood AS ENUM`, `CREATE TYPE "${alice.name}/shop".pair AS`,
      'GENERATED ALWAYS AS IDENTITY', 'CHECK ((length(name) < 100))', 'DEFAULT 0',
      'CREATE INDEX orders_amount', 'WHERE (amount > (0)::numeric)', 'FOREIGN KEY (customer)',
      `CREATE VIEW "${alice.name}/shop".big`, 'LANGUAGE plpgsql', "COMMENT ON TABLE", "'in euros'",
      `setval('"${alice.name}/shop".orders_id_seq', 51, true)`, `GRANT USAGE ON SCHEMA "${alice.name}/shop" TO ${bob.name}`,
      `GRANT SELECT ON TABLE "${alice.name}/shop".orders TO "${alice.name}#${reader.id}"`,
    ]) expect(dump).toContain(expected);
    expect(dump).not.toContain('hidden');
    expect(dump).not.toContain(carol.name);
  });

  it('round trip: psql -f of the dump into a dropped repo gives the same repo', async () => {
    const before = await dumpRepo();
    await tool('psql', url(alice), '-c', `DROP SCHEMA "${alice.name}/shop" CASCADE`);
    const file = join(dir, 'before.sql');
    await writeFile(file, before);
    await tool('psql', url(alice), '-v', 'ON_ERROR_STOP=1', '-q', '-f', file);
    expect(await dumpRepo()).toBe(before);
    const rows = await tool('psql', url(alice, `${alice.name}/shop`), '-At', '-c', 'SELECT count(*), sum(amount), total(), bump(1) FROM big');
    expect(rows.trim()).toBe('10|455.00|1275.00|2');
    // The repo's read key reads the restored repo.
    const read = await tool('psql', svc.pgUrl(alice.name, reader.key, `${alice.name}/shop`, 'sslmode=disable'), '-At', '-c', 'SELECT count(*) FROM orders');
    expect(read.trim()).toBe('50');
  });

  it('-Fc of the user\'s whole view, restored with pg_restore --clean --if-exists --no-owner', async () => {
    const before = await dumpRepo();
    const file = join(dir, 'all.dump');
    await tool('pg_dump', url(alice), '-Fc', '-f', file);
    const list = await tool('pg_restore', '-l', file);
    expect(list).toContain(`${alice.name}/shop`);
    expect(list).not.toContain('hidden');
    expect(list).not.toContain('EVENT TRIGGER');
    await tool('pg_restore', '--clean', '--if-exists', '--no-owner', '--exit-on-error', '-d', url(alice), file);
    expect(await dumpRepo()).toBe(before);
  });
});
