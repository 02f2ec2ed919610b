/**
 * Pooling by transaction with real clients that prepare statements: pgbench -M prepared,
 * pgjdbc (server-side prepared statements from the first use), psycopg2 (SQL PREPARE/EXECUTE),
 * each with more connections than the user's two backends, every answer checked.
 */
import { run } from '../../bench/lib/proc.js';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/shared/package-root.js';
import { startTestService, type TestService } from '../helpers/service.js';

const JDBC_JAR = process.env.REPOBASE_TEST_JDBC_JAR ?? '/usr/share/java/postgresql.jar';
/** Debian's Python, where python3-psycopg2 installs (a python3 earlier on PATH may lack it). */
const PYTHON = process.env.REPOBASE_TEST_PYTHON ?? '/usr/bin/python3';
const fixtures = join(packageRoot, 'test', 'fixtures', 'drivers');

let svc: TestService;
let alice: { name: string; key: string };
let repo: string;

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 2 });
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'bench' });
  repo = `${alice.name}/bench`;
});

afterAll(async () => {
  await svc?.stop();
});

/** Backends of the user after a client's run: never more than its two. */
async function backends(): Promise<number> {
  const { rows } = await svc.control.admin.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1', [alice.name]);
  return Number(rows[0]!.n);
}

describe('clients that prepare statements, six connections on two backends', () => {
  it('pgbench -M prepared, TPC-B and -S: no failed transaction', async () => {
    const url = svc.pgUrl(alice.name, alice.key, repo, 'sslmode=disable');
    const init = await run('pgbench', ['-i', '-s', '1', '-q', url], { timeoutMs: 120_000 });
    expect(init.code, init.stderr).toBe(0);
    // A thread per client: pgbench prepares synchronously (PQprepare), so a thread waiting for a
    // backend for one client would stall the others it runs, holding theirs (so would PgBouncer).
    for (const mode of [[], ['-S']]) {
      const r = await run('pgbench', [...mode, '-M', 'prepared', '-c', '6', '-j', '6', '-T', '3', '-n', url], { timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/number of failed transactions: 0 /);
      expect(Number(/number of transactions actually processed: (\d+)/.exec(r.stdout)?.[1])).toBeGreaterThan(50);
    }
    expect(await backends()).toBeLessThanOrEqual(2);
  });

  it('pgjdbc: named server statements, the same and different texts, with settings of each connection', async () => {
    const url = `jdbc:postgresql://127.0.0.1:${svc.pgPort}/repobase`;
    const r = await run('java', ['-cp', JDBC_JAR, join(fixtures, 'PooledClients.java'), url, alice.name, alice.key, '6'], { timeoutMs: 120_000 });
    expect(r.stdout.trim(), r.stderr).toBe('ok');
    expect(await backends()).toBeLessThanOrEqual(2);
  });

  it('psycopg2: SQL prepared statements, settings and the process id of each connection', async () => {
    const dsn = `host=127.0.0.1 port=${svc.pgPort} dbname=repobase user=${alice.name} password=${alice.key} sslmode=disable`;
    const r = await run(PYTHON, [join(fixtures, 'pooled_clients.py'), dsn, '6'], { timeoutMs: 60_000 });
    expect(r.stdout.trim(), r.stderr).toBe('ok');
    expect(await backends()).toBeLessThanOrEqual(2);
  });
});
