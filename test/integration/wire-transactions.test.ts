/**
 * Differential: what the proxy refuses itself (a policy denial, a statement that does not parse)
 * must affect the transaction exactly as an error from Postgres would: ReadyForQuery `E`, 25P02
 * for later statements, COMMIT answered ROLLBACK, savepoints recovering, extended-protocol
 * batches discarded to Sync (their implicit transaction rolled back), pipelined requests after it
 * answered as Postgres answers them. Each scenario runs directly against Postgres as the user's
 * role and again through repobase, message by message, ReadyForQuery status included.
 *
 * The refused statement reads another user's private repo: Postgres refuses it too (42501, the
 * role wall), with its own wording, so on steps marked `refused` only the SQLSTATE of the errors
 * is compared. A syntax error is refused by both with the same words and is compared whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolePassword } from '../../src/upstream/roles.js';
import { RawClient, q, sync, x, type Answer } from '../helpers/raw-wire.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let secret: string;

interface Step {
  frames: Buffer[];
  readies: number;
  refused?: boolean;
}

/** A simple Query; `refused` when the proxy refuses it (its error is compared by SQLSTATE). */
const Q = (sql: string, refused = false): Step => ({ frames: [q(sql)], readies: 1, refused });
/** One statement as an extended-protocol batch ending in Sync. */
const X = (sql: string, refused = false, name = ''): Step => ({ frames: [...x(sql, [], name), sync()], readies: 1, refused });
/** Several steps sent in one write, before any answer. */
const pipelined = (...steps: Step[]): Step => ({
  frames: steps.flatMap((s) => s.frames),
  readies: steps.reduce((n, s) => n + s.readies, 0),
  refused: steps.some((s) => s.refused),
});

const scenarios: Record<string, (denied: string) => Step[]> = {
  'a refusal aborts the transaction; later statements get 25P02, COMMIT answers ROLLBACK': (denied) => [
    Q('BEGIN'),
    Q('INSERT INTO t VALUES (1)'),
    Q(denied, true),
    Q('INSERT INTO t VALUES (2)'),
    Q('COMMIT'),
    Q('SELECT count(*) FROM t'),
  ],
  'ROLLBACK TO SAVEPOINT recovers from a refusal': (denied) => [
    Q('BEGIN'),
    Q('INSERT INTO t VALUES (1)'),
    Q('SAVEPOINT s'),
    Q(denied, true),
    Q('SELECT 1'),
    Q('ROLLBACK TO SAVEPOINT s'),
    Q('INSERT INTO t VALUES (2)'),
    Q('COMMIT'),
    Q('SELECT id FROM t ORDER BY id'),
  ],
  'a syntax error aborts the transaction, and is still a syntax error in a failed one': () => [
    Q('BEGIN'),
    Q('INSERT INTO t VALUES (1)'),
    Q('SELEC 1'),
    Q('SELEC 2'),
    Q('SELECT 1'),
    Q('END'),
    Q('SELECT count(*) FROM t'),
  ],
  'a refusal in an already failed transaction answers 25P02': (denied) => [
    Q('BEGIN'),
    Q('SELECT 1/0'),
    Q(denied), // Postgres does not look at it: 25P02, compared whole
    Q('ROLLBACK'),
    Q('SELECT 1'),
  ],
  'a refusal outside a transaction changes nothing': (denied) => [Q(denied, true), Q('INSERT INTO t VALUES (1)'), Q('SELECT count(*) FROM t')],
  'a refusal in a multi-statement query string: the statements before it run, then roll back': (denied) => [
    Q(`INSERT INTO t VALUES (1); SELECT 'before'; ${denied}; INSERT INTO t VALUES (2)`, true),
    Q('SELECT count(*) FROM t'),
    Q(`BEGIN; INSERT INTO t VALUES (3); ${denied}`, true),
    Q('INSERT INTO t VALUES (4)'),
    Q('COMMIT'),
    Q('SELECT count(*) FROM t'),
  ],
  'pipelined simple queries around a refusal': (denied) => [
    pipelined(Q('BEGIN'), Q('INSERT INTO t VALUES (1)'), Q(denied, true), Q('INSERT INTO t VALUES (2)'), Q('COMMIT'), Q('SELECT count(*) FROM t')),
    pipelined(Q('INSERT INTO t VALUES (5)'), Q(denied, true), Q('INSERT INTO t VALUES (6)'), Q('SELECT id FROM t ORDER BY id')),
  ],
  'extended protocol: a refused Parse aborts the transaction': (denied) => [
    X('BEGIN'),
    X('INSERT INTO t VALUES (1)'),
    X(denied, true),
    X('INSERT INTO t VALUES (2)'),
    X('COMMIT'),
    X('SELECT count(*) FROM t'),
  ],
  'extended protocol: the implicit transaction of a batch rolls back': (denied) => [
    { frames: [...x('INSERT INTO t VALUES (1)'), ...x(denied), ...x('INSERT INTO t VALUES (2)'), sync()], readies: 1, refused: true },
    { frames: [...x('INSERT INTO t VALUES (3)'), ...x('SELEC'), ...x('INSERT INTO t VALUES (4)'), sync()], readies: 1 },
    X('SELECT count(*) FROM t'),
  ],
  'extended protocol: savepoints and syntax errors': (denied) => [
    X('BEGIN'),
    X('INSERT INTO t VALUES (1)'),
    X('SAVEPOINT s'),
    X(denied, true),
    X('SELEC 1'),
    X('ROLLBACK TO SAVEPOINT s'),
    X('INSERT INTO t VALUES (2)'),
    X('COMMIT'),
    X('SELECT id FROM t ORDER BY id'),
  ],
  'extended protocol: pipelined batches around a refusal': (denied) => [
    pipelined(X('BEGIN'), X('INSERT INTO t VALUES (1)'), X(denied, true), X('INSERT INTO t VALUES (2)'), X('COMMIT'), X('SELECT count(*) FROM t')),
    pipelined(X('INSERT INTO t VALUES (7)'), X(denied, true), X('INSERT INTO t VALUES (8)'), X('SELECT id FROM t ORDER BY id')),
  ],
  'extended protocol: a refused named statement does not exist afterwards': (denied) => [
    X(denied, true, 's1'),
    { frames: [buildBindOf('s1'), sync()], readies: 1 },
    X('BEGIN'),
    X(denied, true, 's2'),
    { frames: [buildBindOf('s2'), sync()], readies: 1 },
    X('ROLLBACK'),
  ],
  'mixed: a simple query refused while an extended batch is in flight': (denied) => [
    pipelined(X('BEGIN'), X('INSERT INTO t VALUES (1)'), Q(denied, true), X('INSERT INTO t VALUES (2)'), Q('COMMIT'), Q('SELECT count(*) FROM t')),
  ],
};

function buildBindOf(statement: string): Buffer {
  return x('', [], statement)[1]!;
}

/** In refused steps, errors are compared by SQLSTATE: Postgres and the policy word them differently. */
function comparable(answers: Answer[], refused: boolean | undefined): Answer[] {
  return refused ? answers.map((a) => (a.startsWith('E 42501 ') ? 'E 42501' : a)) : answers;
}

async function run(client: RawClient, repo: string, steps: Step[]): Promise<Answer[][]> {
  for (const sql of [`SET search_path = "${repo}"`, 'DROP TABLE IF EXISTS t', 'CREATE TABLE t (id int PRIMARY KEY)']) {
    expect((await client.send([q(sql)], 1)).filter((a) => a.startsWith('E '))).toEqual([]);
  }
  const out: Answer[][] = [];
  for (const step of steps) out.push(comparable(await client.send(step.frames, step.readies), step.refused));
  return out;
}

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  const bob = await svc.user('bob');
  await svc.control.createRepo({ owner: alice.name, repo: 'direct' });
  await svc.control.createRepo({ owner: alice.name, repo: 'proxied' });
  await svc.control.createRepo({ owner: bob.name, repo: 'secret' });
  const asBob = await RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: bob.name, password: bob.key });
  await asBob.send([q(`CREATE TABLE "${bob.name}/secret".x (v text)`)], 1);
  asBob.close();
  secret = `SELECT * FROM "${bob.name}/secret".x`;
});

afterAll(async () => {
  await svc?.stop();
});

describe('a statement refused by the proxy fails the transaction as in Postgres', () => {
  for (const [name, scenario] of Object.entries(scenarios)) {
    it(name, async () => {
      const url = new URL(svc.config.upstreamUrl);
      const direct = await RawClient.connect({ host: url.hostname, port: Number(url.port), database: url.pathname.slice(1), user: alice.name, password: rolePassword(svc.config.secret, alice.name) });
      const proxied = await RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: alice.key });
      try {
        const want = await run(direct, `${alice.name}/direct`, scenario(secret));
        const got = await run(proxied, `${alice.name}/proxied`, scenario(secret));
        expect(got).toEqual(want);
        expect(want.flat().some((a) => a.startsWith('E '))).toBe(true);
      } finally {
        direct.close();
        proxied.close();
      }
    });
  }
});

describe('refusals Postgres has no counterpart for fail the transaction alike', () => {
  it('a statement over the size limit (54000) inside a transaction', async () => {
    const proxied = await RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: alice.key });
    try {
      await run(proxied, `${alice.name}/proxied`, []);
      const huge = `SELECT '${'x'.repeat(svc.config.maxStatementBytes)}'`;
      const answers = await proxied.send([q('BEGIN'), q('INSERT INTO t VALUES (1)'), q(huge), q('INSERT INTO t VALUES (2)'), q('COMMIT'), q('SELECT count(*) FROM t')], 6);
      expect(answers.map((a) => a.replace(/^(E \w{5}) .*/, '$1'))).toEqual(['C BEGIN', 'Z T', 'C INSERT 0 1', 'Z T', 'E 54000', 'Z E', 'E 25P02', 'Z E', 'C ROLLBACK', 'Z I', 'T count', 'D 0', 'C SELECT 1', 'Z I']);
    } finally {
      proxied.close();
    }
  });
});
