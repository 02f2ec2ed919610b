// Micro-benchmark of the policy over the client compatibility corpus (psql, drivers, pgbench):
// microseconds per decision with the analysis cached (the relay's hot path: a repeated or
// prepared statement) and uncached (parse + analyse + decide).
//
//   npm run build && node dist/bench/policy.js
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { analyse } from '../src/policy/analyse.js';
import { createPolicy, type Policy, type Rights, type Session } from '../src/policy/index.js';
import { packageRoot } from '../src/shared/package-root.js';

interface Corpus {
  searchPath: string[];
  captures: Array<{ client: string; statements: string[] }>;
}

const rights: Rights = {
  user: 'alice',
  repos: new Map([
    ['alice/sales', 'own'],
    ['carol/shared', 'write'],
    ['erin/public', 'read'],
  ]),
};

function corpus(): { statements: string[]; session: Session } {
  const text = readFileSync(join(packageRoot, 'test/fixtures/policy/client-queries.json'), 'utf8');
  const parsed = JSON.parse(text) as Corpus;
  return { statements: parsed.captures.flatMap((c) => c.statements), session: { searchPath: parsed.searchPath } };
}

/** Mean µs per decision over `rounds` passes of `statements`; every decision must be synchronous. */
function timeDecisions(policy: Policy, statements: readonly string[], session: Session, rounds: number): number {
  let denied = 0;
  const started = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) {
    for (const sql of statements) {
      const d = policy.decide(sql, rights, session);
      if (d instanceof Promise) throw new Error('a corpus statement went to the worker thread');
      if (d.kind === 'deny') denied++;
    }
  }
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  if (denied > 0) throw new Error(`${denied / rounds} corpus statements were denied`);
  return elapsed / (rounds * statements.length);
}

/** Runs the benchmark; µs per decision, cached and uncached, over the compatibility corpus. */
export async function runPolicyBench(): Promise<{ cachedUs: number; uncachedUs: number; statements: number }> {
  const { statements, session } = corpus();
  const uncached = await createPolicy({ maxStatementBytes: 1024 * 1024, cacheSize: 0 });
  const cached = await createPolicy({ maxStatementBytes: 1024 * 1024 });
  try {
    timeDecisions(uncached, statements, session, 3);
    const uncachedUs = timeDecisions(uncached, statements, session, 20);
    timeDecisions(cached, statements, session, 20);
    const cachedUs = timeDecisions(cached, statements, session, 500);
    return { cachedUs, uncachedUs, statements: statements.length };
  } finally {
    await Promise.all([uncached.close(), cached.close()]);
  }
}

/** A multi-row INSERT of about `bytes` bytes, as an ORM or pandas sends it. */
export function bigInsert(bytes: number): string {
  const row = "(123456, 'some text value', 42.5, NULL, TRUE),";
  return `INSERT INTO t (a, b, c, d, e) VALUES ${row.repeat(Math.floor(bytes / row.length) - 1)}(1, 'x', 1, NULL, FALSE)`;
}

/**
 * The decision on a 64 MiB INSERT through the policy as the front ends call it (analysed off the
 * event loop): its time, and the process's peak memory growth meanwhile (sampled every 5 ms).
 */
export async function largeStatement(): Promise<{ bytes: number; ms: number; peakRssGrowthMb: number; kind: string }> {
  const policy = await createPolicy({ maxStatementBytes: 64 * 1024 * 1024 });
  try {
    const sql = bigInsert(64 * 1024 * 1024 - 1024);
    const session = { searchPath: ['alice/sales'] };
    await policy.decide(bigInsert(300 * 1024), rights, session); // starts the worker
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const started = performance.now();
    const d = await policy.decide(sql, rights, session);
    const ms = performance.now() - started;
    clearInterval(sampler);
    return { bytes: Buffer.byteLength(sql), ms, peakRssGrowthMb: (Math.max(peak, process.memoryUsage().rss) - before) / 1048576, kind: d.kind };
  } finally {
    await policy.close();
  }
}

/** Extra figures for the report: the pgbench -S statement alone, and a 1 MiB parse. */
async function details(): Promise<{ hotUs: number; mibMs: number }> {
  const policy = await createPolicy({ maxStatementBytes: 2 * 1024 * 1024 });
  try {
    const hot = ['SELECT abalance FROM pgbench_accounts WHERE aid = $1;'];
    timeDecisions(policy, hot, { searchPath: ['alice/sales'] }, 10_000);
    const hotUs = timeDecisions(policy, hot, { searchPath: ['alice/sales'] }, 200_000);
    const row = "(123456, 'some text value', 42.5),";
    const mib = `INSERT INTO t (a, b, c) VALUES ${row.repeat(Math.floor((1024 * 1024) / row.length) - 1)}(1, 'x', 1)`;
    const started = performance.now();
    for (let i = 0; i < 5; i++) analyse(mib);
    return { hotUs, mibMs: (performance.now() - started) / 5 };
  } finally {
    await policy.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await runPolicyBench();
  const d = await details();
  const large = await largeStatement();
  process.stdout.write(
    `policy over ${r.statements} client statements: ${r.cachedUs.toFixed(2)} µs/decision cached, ${r.uncachedUs.toFixed(1)} µs uncached\n` +
      `pgbench -S statement, cached: ${d.hotUs.toFixed(2)} µs/decision; analysing a 1 MiB INSERT: ${d.mibMs.toFixed(0)} ms (done in the worker thread)\n` +
      `a ${(large.bytes / 1048576).toFixed(0)} MiB INSERT: ${large.kind} in ${large.ms.toFixed(0)} ms, peak RSS growth ${large.peakRssGrowthMb.toFixed(0)} MB\n`,
  );
}
