/**
 * Pooling by transaction, judged against Postgres itself: seeded random scripts of 12 clients of
 * one user (test/helpers/session-scripts.ts) run in one global order against Postgres directly (a
 * backend each) and through repobase with 3 backends for the user, and every answer of every step
 * must be the same — rows, types, command tags, errors with their SQLSTATE, notices,
 * ParameterStatus, the transaction status — and each client's notifications, with their sender.
 * The same scripts through repobase in session mode are the control: they prove the test sound.
 *
 * CI runs a fixed set of seeds; any other by hand:
 *   REPOBASE_POOLING_SEEDS=7,8,9 REPOBASE_POOLING_STEPS=600 npx vitest run test/integration/wire-pooling-differential.test.ts
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolePassword } from '../../src/upstream/roles.js';
import type { UpstreamTarget } from '../../src/upstream/session.js';
import { ScriptClient } from '../helpers/script-client.js';
import { generateScript, SCRIPT_SETUP, type Script } from '../helpers/session-scripts.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { defaultLimits, loginSettings } from '../../src/shared/limits.js';

const CLIENTS = 12;
const BACKENDS = 3;
const SEEDS = (process.env.REPOBASE_POOLING_SEEDS ?? '1,2,3,4,5,6').split(',').map(Number);
const STEPS = Number(process.env.REPOBASE_POOLING_STEPS ?? 300);

let pooled: TestService;
let session: TestService;

/** Where one run of a script goes: a user of its own with a repo of its own. */
interface Run {
  label: string;
  user: string;
  repo: string;
  /** Logs a client in with `params`. */
  connect(params: Record<string, string>): Promise<ScriptClient>;
}

/** What one run answered, normalised: names of the run's own and process ids made alike. */
interface Outcome {
  greetings: string[];
  steps: string[][];
  notifications: string[][];
}

let runs = 0;

async function userRun(svc: TestService, kind: 'direct' | 'through'): Promise<Run> {
  const who = await svc.user(`u${runs++}`);
  const repo = 'r';
  await svc.control.createRepo({ owner: who.name, repo });
  const schema = `"${who.name}/${repo}"`;
  const url = new URL(svc.config.upstreamUrl);
  const direct: UpstreamTarget = { host: url.hostname, port: Number(url.port), database: url.pathname.slice(1), user: who.name, password: rolePassword(svc.config.secret, who.name) };
  // The repo's tables and functions, made by the user itself.
  const setup = new pg.Client({ ...direct, options: `-c search_path=${schema}` });
  await setup.connect();
  for (const sql of SCRIPT_SETUP) await setup.query(sql);
  await setup.end();
  if (kind === 'direct') {
    // The service logs its backends in with the user's limits as session defaults: so does the direct run.
    const limits = Object.entries(loginSettings(defaultLimits(svc.config))).map(([name, value]) => `-c ${name}=${value}`);
    return {
      label: 'direct',
      user: who.name,
      repo,
      connect: (params) => ScriptClient.connect(direct, { ...params, options: [`-c search_path=${schema}`, ...limits, params.options ?? ''].join(' ').trim() }),
    };
  }
  const through: UpstreamTarget = { host: '127.0.0.1', port: svc.pgPort, database: `${who.name}/${repo}`, user: who.name, password: who.key };
  return { label: svc === pooled ? 'pooled' : 'session', user: who.name, repo, connect: (params) => ScriptClient.connect(through, params) };
}

async function play(script: Script, run: Run): Promise<Outcome> {
  const schema = `"${run.user}/${run.repo}"`;
  const clients: ScriptClient[] = [];
  for (const params of script.startup) clients.push(await run.connect(params));
  const pids = new Map(clients.map((c, i) => [c.processId, i]));
  // Process ids in values and messages name clients (never an error's or notice's SQLSTATE, which
  // may read as one); a row description's numbers are type oids.
  const clientsIn = (text: string): string => text.replace(/\b[1-9]\d{2,}\b/g, (n) => (pids.has(Number(n)) ? `<client ${pids.get(Number(n))}>` : n));
  const normal = (line: string): string => {
    const named = line.replaceAll(run.user, 'U');
    if (named.startsWith('T ')) return named.replace(/:(\d{5,})\b/g, (m, oid: string) => (Number(oid) >= 16384 ? ':<oid>' : m));
    const coded = /^[EN] [0-9A-Z]{5} /.exec(named);
    return coded ? coded[0] + clientsIn(named.slice(coded[0].length)) : clientsIn(named);
  };
  const steps: string[][] = [];
  try {
    for (const step of script.steps) {
      const request = 'query' in step.request ? { query: step.request.query.replaceAll('{R}', schema) } : step.request;
      const answers = await clients[step.client]!.run(request);
      steps.push(answers.map(normal));
    }
    // Notifications still on their way arrive before the answer to a last query.
    for (const c of clients) await c.run({ query: 'SELECT 1' });
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  const greetings = clients.map((c) => [...c.greeting].map(([k, v]) => `${k}=${v}`).sort().join(', '));
  const notifications = clients.map((c) => c.notifications.map((n) => `${n.channel} ${n.payload} from ${pids.has(n.pid) ? `client ${pids.get(n.pid)}` : `process ${n.pid}`}`));
  return { greetings: greetings.map(normal), steps, notifications };
}

/** The differences of `got` from `want`, each with the steps of its client before it (at most `limit`). */
function differences(script: Script, want: Outcome, got: Outcome, limit = 3): string[] {
  const out: string[] = [];
  for (let i = 0; i < script.steps.length && out.length < limit; i++) {
    const a = want.steps[i]!.join(' / ');
    const b = got.steps[i]!.join(' / ');
    if (a === b) continue;
    const { client, request } = script.steps[i]!;
    const before = script.steps
      .slice(0, i)
      .map((s, j) => ({ s, j }))
      .filter(({ s }) => s.client === client)
      .slice(-6)
      .map(({ s, j }) => `    #${j} ${describeRequest(s.request)} → ${want.steps[j]!.join(' / ')}`);
    out.push([`step #${i} of client ${client}: ${describeRequest(request)}`, `  direct:  ${a}`, `  through: ${b}`, '  before, the same client:', ...before].join('\n'));
  }
  for (let c = 0; c < want.notifications.length && out.length < limit; c++) {
    const a = want.notifications[c]!.join('; ');
    const b = got.notifications[c]!.join('; ');
    if (a !== b) out.push(`notifications of client ${c}:\n  direct:  ${a}\n  through: ${b}`);
  }
  return out;
}

function describeRequest(r: Script['steps'][number]['request']): string {
  return 'query' in r ? r.query : JSON.stringify(r.batch);
}

beforeAll(async () => {
  pooled = await startTestService({ pgSessionsPerUser: BACKENDS, pgPoolTimeoutMs: 3000 });
  session = await startTestService({ pgPoolMode: 'session', pgSessionsPerUser: CLIENTS + 2 });
});

afterAll(async () => {
  await pooled?.stop();
  await session?.stop();
});

describe(`${CLIENTS} clients on ${BACKENDS} backends answer as on backends of their own`, () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: every step as Postgres answers it directly, pooled and in session mode`, async () => {
      const script = generateScript(seed, { clients: CLIENTS, steps: STEPS, maxHolders: BACKENDS - 1 });
      const direct = await play(script, await userRun(pooled, 'direct'));
      const control = await play(script, await userRun(session, 'through'));
      const through = await play(script, await userRun(pooled, 'through'));
      expect({ 'session mode (the control)': differences(script, direct, control), 'pooled by transaction': differences(script, direct, through) }).toEqual({ 'session mode (the control)': [], 'pooled by transaction': [] });
    });
  }
});
