/**
 * Large objects over the wire: the FunctionCall message for the large-object functions only,
 * matched by the server's oids; psycopg2 (libpq's lo_*) and pgjdbc's LargeObjectManager through
 * pooling by transaction; objects private to their owner, counted in usage, gone with the user.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../bench/lib/proc.js';
import { buildFunctionCall } from '../../src/protocol/index.js';
import { packageRoot } from '../../src/shared/package-root.js';
import { RawClient } from '../helpers/raw-wire.js';
import { startTestService, type TestService } from '../helpers/service.js';

const JDBC_JAR = process.env.REPOBASE_TEST_JDBC_JAR ?? '/usr/share/java/postgresql.jar';
const PYTHON = process.env.REPOBASE_TEST_PYTHON ?? '/usr/bin/python3';
const fixtures = join(packageRoot, 'test', 'fixtures', 'drivers');

let svc: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let scratch: string;

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 2 });
  alice = await svc.user('alice');
  bob = await svc.user('bob');
  scratch = await mkdtemp(join(tmpdir(), 'repobase-lo-'));
});

afterAll(async () => {
  await svc?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

async function connect(user: { name: string; key: string }): Promise<pg.Client> {
  const c = new pg.Client(svc.pgOptions(user.name, user.key));
  await c.connect();
  return c;
}

const owned = async (user: string) =>
  Number((await svc.control.admin.query<{ n: string }>('SELECT count(*) AS n FROM pg_largeobject_metadata m JOIN pg_roles r ON r.oid = m.lomowner WHERE r.rolname = $1', [user])).rows[0]!.n);

describe('large objects', () => {
  let kept: number[] = [];

  it('psycopg2: create, write, seek, truncate, read, client-side export and import, unlink, rollback', async () => {
    const dsn = `host=127.0.0.1 port=${svc.pgPort} dbname=repobase user=${alice.name} password=${alice.key} sslmode=disable`;
    const r = await run(PYTHON, [join(fixtures, 'large_objects.py'), dsn, scratch], { timeoutMs: 60_000 });
    expect(r.stdout.trim().split('\n').at(-1), r.stdout + r.stderr).toBe('ok');
    kept = /kept (\d+) (\d+)/.exec(r.stdout)!.slice(1).map(Number);
    expect(await owned(alice.name)).toBe(2);
  });

  it("pgjdbc's LargeObjectManager", async () => {
    const url = `jdbc:postgresql://127.0.0.1:${svc.pgPort}/repobase`;
    const r = await run('java', ['-cp', JDBC_JAR, join(fixtures, 'LargeObjects.java'), url, alice.name, alice.key], { timeoutMs: 120_000 });
    expect(r.stdout.trim().split('\n').at(-1), r.stdout + r.stderr).toBe('ok');
    kept.push(Number(/kept (\d+)/.exec(r.stdout)![1]));
    expect(await owned(alice.name)).toBe(3);
  });

  it("another user can neither read nor remove them, by SQL or by FunctionCall", async () => {
    const b = await connect(bob);
    try {
      await expect(b.query('SELECT lo_get($1)', [kept[0]])).rejects.toMatchObject({ code: '42501' });
      await expect(b.query('SELECT lo_unlink($1)', [kept[0]])).rejects.toMatchObject({ code: '42501' });
    } finally {
      await b.end();
    }
    const { rows } = await svc.control.admin.query<{ oid: number }>("SELECT oid::int FROM pg_proc WHERE proname = 'lo_unlink'");
    const raw = await RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: bob.name, password: bob.key });
    try {
      const oid = Buffer.alloc(4);
      oid.writeUInt32BE(kept[0]!);
      const answer = await raw.send([buildFunctionCall({ functionOid: rows[0]!.oid, argFormats: [1], args: [oid], resultFormat: 0 })], 1);
      expect(answer.join('\n')).toMatch(/E 42501 must be owner of large object/);
    } finally {
      raw.close();
    }
    expect(await owned(alice.name)).toBe(3);
  });

  it('FunctionCall of any other function, or the server-side lo_import / lo_export, is refused with 0A000', async () => {
    const { rows } = await svc.control.admin.query<{ oid: number; proname: string }>("SELECT oid::int, proname FROM pg_proc WHERE proname IN ('int4pl', 'lo_import', 'lo_export', 'pg_read_file') ORDER BY proname, oid");
    const raw = await RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: alice.key });
    try {
      for (const { oid, proname } of rows) {
        const answer = await raw.send([buildFunctionCall({ functionOid: oid, argFormats: [], args: [], resultFormat: 0 })], 1);
        expect(answer.join('\n'), proname).toMatch(/E 0A000 the function call protocol message is supported only for the large-object functions/);
      }
      // The session goes on.
      expect(await raw.send([Buffer.from('Q\0\0\0\x0dSELECT 1\0', 'latin1')], 1)).toContain('D 1');
    } finally {
      raw.close();
    }
  });

  it('are counted in usage, and removed with their user', async () => {
    const res = await fetch(`${svc.httpUrl}/api/v1beta/usage/`, { headers: { authorization: `Bearer ${alice.key}` } });
    const body = (await res.json()) as { storage: { large_objects: number; large_object_bytes: number | null; repo_bytes: number } };
    expect(body.storage.large_objects).toBe(3);
    expect(body.storage.large_object_bytes).toBe(5000 + 5000 + 300_000);
    await svc.control.deleteUser(alice.name);
    expect(await owned(alice.name)).toBe(0);
    const left = await svc.control.admin.query('SELECT 1 FROM pg_largeobject_metadata WHERE oid = ANY($1::oid[])', [kept]);
    expect(left.rowCount).toBe(0);
  });
});
