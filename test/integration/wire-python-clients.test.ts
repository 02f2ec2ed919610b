/**
 * Python's drivers through the wire front end, as their users run them: psycopg 3 reading large
 * results over TLS (its libpq loop is non-blocking), asyncpg preparing statements again after a
 * schema change and stopping a failed `executemany` early.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../bench/lib/proc.js';
import { packageRoot } from '../../src/shared/package-root.js';
import { rolePassword } from '../../src/upstream/roles.js';
import { startTestService, type TestService } from '../helpers/service.js';

/** Debian's Python, where python3-psycopg and python3-asyncpg install (a python3 earlier on PATH may lack them). */
const PYTHON = process.env.REPOBASE_TEST_PYTHON ?? '/usr/bin/python3';
const fixtures = join(packageRoot, 'test', 'fixtures', 'drivers');

let svc: TestService;
let alice: { name: string; key: string };

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 1 });
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'py' });
});

afterAll(async () => {
  await svc?.stop();
});

describe('psycopg 3 over TLS', () => {
  it('reads large results and COPY TO 300 times without a hang (TLS records no larger than Postgres writes)', async () => {
    const dsn = `host=127.0.0.1 port=${svc.pgPort} dbname=repobase user=${alice.name} password=${alice.key} sslmode=require`;
    const r = await run(PYTHON, [join(fixtures, 'tls_large_results.py'), dsn, '300'], { timeoutMs: 60_000 });
    expect(r.stdout.trim(), r.stderr).toBe('ok');
  }, 90_000);
});

describe('asyncpg, every connection on one backend', () => {
  it('after ALTER TABLE and ALTER TYPE, a statement prepared again under a new name and by a new connection gets the new shape', async () => {
    const dsn = `postgresql://${alice.name}:${alice.key}@127.0.0.1:${svc.pgPort}/${encodeURIComponent(`${alice.name}/py`)}`;
    const r = await run(PYTHON, [join(fixtures, 'asyncpg_schema_changes.py'), dsn], { timeoutMs: 60_000 });
    expect(r.stdout.trim(), r.stderr).toBe('ok');
  }, 90_000);
});

describe('asyncpg executemany', () => {
  it('stops writing a pipeline whose third row fails long before its end, as against Postgres directly', async () => {
    // 1,024 rows of 32 KiB: the proxy used to read all 32 MiB ahead of what Postgres took, so the
    // driver wrote them all before the error came back; read at Postgres' pace, the driver stops
    // once the error reaches it (directly: after 10–120 rows; through the proxy's two hops of
    // socket buffers a few more).
    const rows = 1024;
    const url = new URL(svc.config.upstreamUrl);
    const schema = `${alice.name}/py`;
    const direct = `postgresql://${alice.name}:${encodeURIComponent(rolePassword(svc.config.secret, alice.name))}@${url.host}${url.pathname}?options=${encodeURIComponent(`-c search_path="${schema}"`)}`;
    const through = `postgresql://${alice.name}:${alice.key}@127.0.0.1:${svc.pgPort}/${encodeURIComponent(schema)}`;
    const taken = async (dsn: string, table: string) => {
      const r = await run(PYTHON, [join(fixtures, 'asyncpg_executemany_stop.py'), dsn, table, String(rows)], { timeoutMs: 60_000 });
      const [n, left] = r.stdout.trim().split(' ').map(Number);
      expect(left, r.stdout + r.stderr).toBe(0); // atomic: nothing of the batch stayed
      return n!;
    };
    expect(await taken(direct, 'exm_direct')).toBeLessThan(rows);
    for (let i = 0; i < 3; i++) expect(await taken(through, 'exm_through')).toBeLessThan(rows / 2);
  }, 90_000);
});
