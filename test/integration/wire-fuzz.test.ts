/**
 * Live wire fuzz against an in-process service: mutated frames from 20 connections, a healthy
 * client querying throughout. `npm test` runs ~5,000 frames; the full run is the same code with
 * `REPOBASE_FUZZ_FRAMES=100000` (and `REPOBASE_FUZZ_SEED` to replay another seed).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { runFuzz } from '../../bench/fuzz.js';
import { startTestService, type TestService } from '../helpers/service.js';

const FRAMES = Number(process.env['REPOBASE_FUZZ_FRAMES'] ?? 5000);
const SEED = Number(process.env['REPOBASE_FUZZ_SEED'] ?? 20261124);
const CONNECTIONS = 20;

let svc: TestService;
let user: { name: string; key: string };

beforeAll(async () => {
  svc = await startTestService({ pgMaxConnections: CONNECTIONS + 10 });
  user = await svc.user('fuzz');
});

afterAll(async () => {
  await svc.stop();
});

it(`${FRAMES} mutated frames from ${CONNECTIONS} connections: every connection ends, nobody else notices`, { timeout: Math.max(60_000, FRAMES * 5) }, async () => {
  const options = { connections: CONNECTIONS, port: svc.pgPort, user: user.name, key: user.key, database: svc.config.serviceDatabase };
  // A short warm-up first, so the measured run's "before" already holds what is paid once (the
  // role's upstream pool, compiled code, grown socket buffers) and RSS growth means retention.
  await runFuzz({ ...options, frames: 1000, seed: SEED + 1 });
  const report = await runFuzz({ ...options, frames: FRAMES, seed: SEED });
  if (process.env['REPOBASE_FUZZ_FRAMES'] !== undefined) process.stdout.write(`wire fuzz: ${JSON.stringify(report)}\n`);

  expect(report.framesSent).toBeGreaterThanOrEqual(FRAMES);
  expect(report.hung).toBe(0);
  expect(report.loginFailures).toBe(0);
  expect(report.healthyErrors).toEqual([]);
  expect(report.healthyQueries).toBeGreaterThan(0);
  // The fuzz must actually reach the decoders: most damaged sessions end in a protocol violation.
  expect(report.endedBy08P01).toBeGreaterThan(report.sessions / 4);
  expect(report.endedBy08P01 + report.closedWithoutError + Object.values(report.endedByOtherError).reduce((a, b) => a + b, 0)).toBe(report.sessions);
  // Memory comes back: only meaningful after a forced GC; without one RSS is reported, not judged.
  if (report.gcExposed) {
    expect(report.heapAfterBytes).toBeLessThan(report.heapBeforeBytes * 1.2);
    expect(report.rssAfterBytes).toBeLessThan(report.rssBeforeBytes * 1.2);
  }

  // And a fresh client still logs in and gets answers.
  const after = new pg.Client(svc.pgOptions(user.name, user.key));
  await after.connect();
  expect((await after.query('SELECT 41 + 1 AS n')).rows).toEqual([{ n: 42 }]);
  await after.end();
});
