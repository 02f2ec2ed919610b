// Large statements are analysed in a worker thread. A worker runs compiled JavaScript, which
// vitest (running TypeScript sources) does not have: this test transpiles the policy sources
// into node_modules/.cache (where node resolves libpg-query as usual) and drives that build.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { analyse } from '../../../src/policy/analyse.js';
import type * as PolicyModule from '../../../src/policy/index.js';
import { loadParsers } from '../../../src/policy/parse.js';
import type * as PoolModule from '../../../src/policy/pool.js';
import { createParsePool } from '../../../src/policy/pool.js';
import { alice, inSales } from './fixture.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const out = join(root, 'node_modules/.cache/repobase-policy-worker-test');

function transpile(from: string, to: string): void {
  const { outputText } = ts.transpileModule(readFileSync(from, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  });
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, outputText);
}

/** A multi-row INSERT of about `bytes` bytes into `table`: slow to parse, one statement. */
/** Rows with a cast each: nothing to cut (compact.ts), so the whole text is parsed. */
function bulkInsert(table: string, bytes: number): string {
  const row = "(123456, 'some text value'::text, 42.5),";
  return `INSERT INTO ${table} (a, b, c) VALUES ${row.repeat(Math.floor(bytes / row.length) - 1)}(1, 'x', 1)`;
}

let compiled: { policy: typeof PolicyModule; pool: typeof PoolModule };

beforeAll(async () => {
  rmSync(out, { recursive: true, force: true });
  for (const file of readdirSync(join(root, 'src/policy')).filter((f) => f.endsWith('.ts'))) {
    transpile(join(root, 'src/policy', file), join(out, 'src/policy', file.replace(/\.ts$/, '.js')));
  }
  transpile(join(root, 'src/shared/errors.ts'), join(out, 'src/shared/errors.js'));
  // How refusals name a scoped key.
  transpile(join(root, 'src/shared/key-words.ts'), join(out, 'src/shared/key-words.js'));
  // The character classes of the statement scanners (shape.ts, compact.ts).
  transpile(join(root, 'src/shared/chars.ts'), join(out, 'src/shared/chars.js'));
  // Which client encodings the policy lets a session set.
  transpile(join(root, 'src/shared/client-encoding.ts'), join(out, 'src/shared/client-encoding.js'));
  // How a storage quota's refusal says sizes.
  transpile(join(root, 'src/shared/units.ts'), join(out, 'src/shared/units.js'));
  // The policy's cache counts hits and misses for the metrics.
  transpile(join(root, 'src/observe/metrics.ts'), join(out, 'src/observe/metrics.js'));
  writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
  writeFileSync(join(out, 'crash.js'), "throw new Error('worker crashed on start');\n");
  const url = (p: string): string => pathToFileURL(join(out, p)).href;
  compiled = {
    policy: (await import(url('src/policy/index.js'))) as typeof PolicyModule,
    pool: (await import(url('src/policy/pool.js'))) as typeof PoolModule,
  };
  await loadParsers();
});

afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('with the compiled worker', () => {
  test('the pool really uses a thread', () => {
    expect(compiled.pool.createParsePool(analyse).threaded).toBe(true);
  });

  test('a large statement is decided off the event loop', async () => {
    const sql = bulkInsert('"bob/secret".t', 1024 * 1024 - 100);
    const started = performance.now();
    expect(analyse(sql).statements[0]?.refs[0]?.schema).toBe('bob/secret');
    const inProcessMs = performance.now() - started;

    const policy = await compiled.policy.createPolicy({ maxStatementBytes: 1024 * 1024 });
    try {
      // Warm the worker up (thread start, WASM load) so the measurement is the parse alone.
      await policy.decide(bulkInsert('"alice/sales".t', 20_000), alice, inSales);
      let last = performance.now();
      let longestGap = 0;
      const timer = setInterval(() => {
        const now = performance.now();
        longestGap = Math.max(longestGap, now - last);
        last = now;
      }, 2);
      const pending = policy.decide(sql, alice, inSales);
      expect(pending).toBeInstanceOf(Promise);
      const d = await pending;
      clearInterval(timer);
      expect(d).toMatchObject({ kind: 'deny', error: { code: '42501', message: 'permission denied for repo "bob/secret"' } });
      expect(inProcessMs).toBeGreaterThan(30);
      expect(longestGap).toBeLessThan(inProcessMs / 2);
    } finally {
      await policy.close();
    }
  });

  test('a crashed worker hands its work back to the main thread', async () => {
    const pool = compiled.pool.createParsePool(analyse, pathToFileURL(join(out, 'crash.js')));
    expect(pool.threaded).toBe(true);
    const a = await pool.analyse('SELECT * FROM "bob/secret".t', { escapeStrings: false });
    expect(a.statements[0]?.refs[0]?.schema).toBe('bob/secret');
    await pool.close();
  });
});

describe('without a compiled worker (running from sources)', () => {
  test('large statements are analysed in-process, on a later tick', async () => {
    const pool = createParsePool(analyse, new URL('file:///nonexistent/worker.js'));
    expect(pool.threaded).toBe(false);
    const a = await pool.analyse('DELETE FROM "dave/readonly".t', { escapeStrings: false });
    expect(a.statements[0]?.refs[0]).toMatchObject({ schema: 'dave/readonly', need: 'write' });
  });

  test('small statements are decided synchronously: the hot path has no promise', async () => {
    const policy = await compiled.policy.createPolicy({ maxStatementBytes: 1024 * 1024 });
    const first = policy.decide('SELECT abalance FROM pgbench_accounts WHERE aid = $1', alice, inSales);
    const again = policy.decide('SELECT abalance FROM pgbench_accounts WHERE aid = $1', alice, inSales);
    expect(first).not.toBeInstanceOf(Promise);
    expect(again).toEqual(first);
    await policy.close();
  });
});
