/**
 * The client commands of the built `repobase` CLI against a real server: query in every format,
 * from an argument, a file and standard input; repos; repo create through the API; exit codes.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let env: Record<string, string>;

beforeAll(async () => {
  srv = await startRest({ config: { maxResultRows: 5 } });
  alice = await srv.user('alice');
  bob = await srv.user('bob');
  env = { REPOBASE_URL: srv.url, REPOBASE_API_KEY: alice.key };
});

afterAll(async () => {
  await srv?.stop();
});

const SQL = "SELECT 1 AS a, 'x,y' AS b, NULL::text AS c, '' AS d, 9007199254740993::int8 AS e, true AS f";

describe('repobase query', () => {
  it('prints CSV when stdout is not a terminal', async () => {
    const r = await runCli(['query', SQL], env);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toBe('a,b,c,d,e,f\n1,"x,y",,"",9007199254740993,true\n');
  });

  it('--format json writes the API answer with exact digits', async () => {
    const r = await runCli(['query', '--format', 'json', SQL], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `{"query_string":${JSON.stringify(SQL)},"fields":{"a":"INTEGER","b":"TEXT","c":"TEXT","d":"TEXT","e":"BIGINT","f":"BOOLEAN"},"data":[[1,"x,y",null,"",9007199254740993,true]],"command":"SELECT","row_count":1}\n`,
    );
  });

  it('--format table aligns columns and counts rows; a command prints its tag', async () => {
    const r = await runCli(['query', '--format', 'table', 'SELECT g AS n, repeat($$ab$$, g) AS s FROM generate_series(1, 3) g'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('n | s\n--+-------\n1 | ab\n2 | abab\n3 | ababab\n(3 rows)\n');
    await runCli(['query', `CREATE SCHEMA "${alice.name}/cli"`], env);
    const tag = await runCli(['query', '--format', 'table', `CREATE TABLE "${alice.name}/cli".t (id int)`], env);
    expect(tag.stdout).toBe('CREATE TABLE\n');
    const ins = await runCli(['query', '--format', 'table', `INSERT INTO "${alice.name}/cli".t VALUES (1), (2)`], env);
    expect(ins.stdout).toBe('INSERT 2\n');
  });

  it('reads the statement from -f FILE and from standard input', async () => {
    const file = join(srv.config.dataDir, 'q.sql');
    await writeFile(file, 'SELECT 40 + 2 AS answer');
    expect((await runCli(['query', '-f', file], env)).stdout).toBe('answer\n42\n');
    expect((await runCli(['query'], env, 'SELECT 7 AS seven')).stdout).toBe('seven\n7\n');
  });

  it('warns on stderr when the server truncated the result', async () => {
    const r = await runCli(['query', 'SELECT g FROM generate_series(1, 9) g'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('g\n1\n2\n3\n4\n5\n');
    expect(r.stderr).toContain('cut the result at 5 rows');
  });

  it('prints ERROR <SQLSTATE>: message (and HINT) on stderr and exits 1', async () => {
    const r = await runCli(['query', 'SELECT 1/0'], env);
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe('ERROR 22012: division by zero\n');
    const denied = await runCli(['query', `CREATE TABLE "${bob.name}/x".t (id int)`], env);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^ERROR 42501: .*\nHINT: .+\n$/);
  });

  it('exits 1 with the error when the statement fails after rows were sent', async () => {
    const unlimited = await startRest();
    try {
      const u = await unlimited.user('carol');
      const r = await runCli(['query', 'SELECT 1 / (200000 - g) FROM generate_series(1, 300000) g'], { REPOBASE_URL: unlimited.url, REPOBASE_API_KEY: u.key });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe('ERROR 22012: division by zero\n');
      expect(r.stdout.startsWith('?column?\n0\n0\n')).toBe(true); // rows came before the error
    } finally {
      await unlimited.stop();
    }
  });

  it('usage errors exit 2', async () => {
    expect((await runCli(['query', 'SELECT 1'], { REPOBASE_URL: srv.url })).code).toBe(2); // no key
    expect((await runCli(['query', '--format', 'xml', 'SELECT 1'], env)).code).toBe(2);
    expect((await runCli(['query', '-f', 'x.sql', 'SELECT 1'], env)).code).toBe(2);
    expect((await runCli(['query', '-f', '/nonexistent/q.sql'], env)).code).toBe(2);
    const noKey = await runCli(['query', 'SELECT 1'], { REPOBASE_URL: srv.url });
    expect(noKey.stderr).toContain('REPOBASE_API_KEY');
  });

  it('a bad key exits 1 with 28P01; an unreachable server with 08006', async () => {
    const bad = await runCli(['query', '-k', 'rb_000000000000_' + 'A'.repeat(43), 'SELECT 1'], { REPOBASE_URL: srv.url });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('ERROR 28P01: invalid API key');
    const down = await runCli(['query', '--url', `http://127.0.0.1:${await freePort()}`, 'SELECT 1'], env);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^ERROR 08006: cannot reach repobase at http:\/\/127\.0\.0\.1:\d+/);
  });
});

describe('repobase repos and repo create', () => {
  it('repo create with a key goes through the API, in the key owner\'s namespace', async () => {
    const r = await runCli(['repo', 'create', `${alice.name}/shop`, '--public'], env);
    expect(r).toMatchObject({ code: 0, stdout: `${alice.name}/shop\n` });
    expect((await srv.control.getRepo({ owner: alice.name, repo: 'shop' }))?.isPrivate).toBe(false);
    const other = await runCli(['repo', 'create', `${bob.name}/stolen`, '-k', alice.key, '--url', srv.url], {});
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('ERROR 42501');
    expect(await srv.control.getRepo({ owner: bob.name, repo: 'stolen' })).toBeUndefined();
  });

  it('repos lists the key owner\'s repos', async () => {
    const r = await runCli(['repos'], env);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^name\s+\| visibility \| description \| created$/);
    expect(r.stdout).toMatch(new RegExp(`${alice.name}/cli\\s+\\| private`));
    expect(r.stdout).toMatch(new RegExp(`${alice.name}/shop\\s+\\| public`));
    expect(r.stdout).toContain('(2 rows)');
    const json = await runCli(['repos', '--format', 'json'], env);
    expect((JSON.parse(json.stdout) as { repos: { name: string }[] }).repos.map((x) => x.name)).toEqual([`${alice.name}/cli`, `${alice.name}/shop`]);
  });
});

describe('async queries from the CLI', () => {
  it('query --async prints the id; query-result writes the stored result in every format; queries lists them', async () => {
    const sent = await runCli(['query', '--async', "SELECT g AS n, 'v,' || g AS s, NULL::int AS z FROM generate_series(1, 8) g"], env);
    expect(sent.code, sent.stderr).toBe(0);
    const id = sent.stdout.trim();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // Stored whole: the server's maxResultRows (5) caps POST /query/ answers, not async results.
    const csv = await runCli(['query-result', id, '--wait'], env);
    expect(csv).toMatchObject({ code: 0, stderr: '' });
    expect(csv.stdout).toBe(['n,s,z', ...Array.from({ length: 8 }, (_, i) => `${i + 1},"v,${i + 1}",`)].join('\n') + '\n');
    const json = await runCli(['query-result', id, '--format', 'json', '--offset', '6'], env);
    expect(JSON.parse(json.stdout)).toMatchObject({ fields: { n: 'INTEGER', s: 'TEXT', z: 'INTEGER' }, data: [[7, 'v,7', null], [8, 'v,8', null]], command: 'SELECT', row_count: 8 });
    const table = await runCli(['query-result', id, '--format', 'table', '--limit', '2'], env);
    expect(table.stdout).toBe('n | s   | z\n--+-----+--\n1 | v,1 |\n2 | v,2 |\n(2 rows)\n');

    const list = await runCli(['queries', '--limit', '3'], env);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^id\s+\| status\s+\| kind\s+\| submitted\s+\| duration\s+\| rows \| error\s*\| query$/);
    expect(list.stdout).toMatch(new RegExp(`^${id} \\| succeeded \\| async \\|`, 'm'));
    const json2 = await runCli(['queries', '--format', 'json', '--status', 'succeeded'], env);
    expect((JSON.parse(json2.stdout) as { queries: { id: string }[] }).queries.map((q) => q.id)).toContain(id);
  });

  it('query-cancel cancels a running query, then deletes it; errors exit 1', async () => {
    const sent = await runCli(['query', '--async', 'SELECT pg_sleep(30)'], env);
    const id = sent.stdout.trim();
    const early = await runCli(['query-result', id], env);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/^ERROR 55000: query [0-9a-f-]{36} (is still running|has not started yet)/);
    expect(await runCli(['query-cancel', id], env)).toMatchObject({ code: 0, stdout: `cancelled ${id}\n` });
    expect(await runCli(['query-cancel', id], env)).toMatchObject({ code: 0, stdout: `deleted ${id}\n` });
    const gone = await runCli(['query-cancel', id], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain(`ERROR 42704: no query with id "${id}"`);
    expect((await runCli(['queries', '--limit', 'x'], env)).code).toBe(2);
  });
});

describe('repobase key create, keys, key revoke (through the API)', () => {
  it('makes a scoped key, lists it, and revokes it; the scoped key itself manages nothing', async () => {
    expect((await srv.call(alice.key, 'POST', '/repos/', { name: 'cli-keys' })).status).toBe(201);
    const repo = `${alice.name}/cli-keys`;
    const made = await runCli(['key', 'create', '--name', 'dashboard', '--repo', repo, '--access', 'read', '--expires', '30d'], env);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^rb_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n$/);
    const key = made.stdout.trim();
    const id = key.split('_')[1]!;
    const listed = await runCli(['keys'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+\\| rb_${id}\\s+\\| dashboard \\| read\\s+\\| ${repo}`));
    expect(listed.stdout).not.toContain(key.slice(16));
    const json = JSON.parse((await runCli(['keys', '--json'], env)).stdout) as { keys: Array<{ id: string; expires_at: string }> };
    const expires = Date.parse(json.keys.find((k) => k.id === id)!.expires_at);
    expect(Math.abs(expires - (Date.now() + 30 * 86_400_000))).toBeLessThan(120_000);
    // The scoped key reads its repo and manages no key.
    const scoped = { ...env, REPOBASE_API_KEY: key };
    expect((await runCli(['query', '--format', 'csv', 'SELECT 1 AS one'], scoped)).stdout).toBe('one\n1\n');
    const refused = await runCli(['keys'], scoped);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('ERROR 42501: listing keys needs a full API key');
    expect((await runCli(['key', 'revoke', id], env)).code).toBe(0);
    expect((await runCli(['query', 'SELECT 1'], scoped)).code).toBe(1);
  });

  it('refuses bad input with exit 2 (or the server\'s error, exit 1), making nothing', async () => {
    const before = JSON.parse((await runCli(['keys', '--json'], env)).stdout) as { keys: unknown[] };
    expect((await runCli(['key', 'create', '--expires', 'someday'], env)).code).toBe(2);
    expect((await runCli(['key', 'create', '--access', 'admin'], env)).code).toBe(2);
    expect((await runCli(['key', 'create', bob.name], env)).code).toBe(2); // with a key: its own user's keys only
    const missing = await runCli(['key', 'create', '--repo', `${alice.name}/nothing`], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`ERROR 3F000: repo "${alice.name}/nothing" does not exist`);
    const after = JSON.parse((await runCli(['keys', '--json'], env)).stdout) as { keys: unknown[] };
    expect(after.keys.length).toBe(before.keys.length);
  });
});
