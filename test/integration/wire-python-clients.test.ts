/**
 * Python's drivers through the wire front end, as their users run them: psycopg 3 reading large
 * results over TLS (its libpq loop is non-blocking), asyncpg preparing statements again after a
 * schema change and stopping a failed `executemany` early.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../bench/lib/proc.js';
import { packageRoot } from '../../src/shared/package-root.js';
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
