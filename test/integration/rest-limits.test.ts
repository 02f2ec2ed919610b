/**
 * Limits of the REST API on a server configured small: body size (413), statement size (413),
 * rate limit per user (429), statement timeout (504), row cap (truncated), upstream down (503), and
 * that nothing a statement does to its session outlives its request.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { startRest, type RestServer } from '../helpers/rest.js';

let srv: RestServer;

beforeAll(async () => {
  srv = await startRest({
    config: {
      httpBodyLimitBytes: 4096,
      maxStatementBytes: 2000,
      rateLimitMax: 30,
      statementTimeoutMs: 1000,
      maxResultRows: 10,
      // One connection per role: a statement's session changes would meet the next request.
      upstreamPoolMax: 1,
    },
  });
});

afterAll(async () => {
  await srv?.stop();
});

describe('size limits', () => {
  it('a body over httpBodyLimitBytes is 413 54000', async () => {
    const { key } = await srv.user('big');
    const r = await srv.call(key, 'POST', '/query/', { query_string: `SELECT '${'x'.repeat(5000)}'` });
    expect(r.status).toBe(413);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('54000');
  });

  it('a statement over maxStatementBytes is 413 54000, with the query echoed', async () => {
    const { key } = await srv.user('long');
    const sql = `SELECT '${'x'.repeat(2100)}'`;
    const r = await srv.query(key, sql);
    expect(r.status).toBe(413);
    expect(r.body.error?.code).toBe('54000');
    expect(r.body.query_string).toBe(sql);
  });

  it('a body that is not what the schema says is 400 22023', async () => {
    const { key } = await srv.user('bad');
    const r = await srv.call(key, 'POST', '/query/', { sql: 'SELECT 1' });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('22023');
    const notJson = await srv.call(key, 'POST', '/query/', '{"query_string": ');
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { code: string } }).error.code).toBe('22P02');
  });
});

describe('rate limit', () => {
  it('answers 429 53400 with Retry-After past rateLimitMax requests of one user, all their keys together; other users go on', async () => {
    const a = await srv.user('busy');
    const b = await srv.user('calm');
    const second = (await srv.control.keys.create(a.name)).key; // a new key is no way around the limit
    for (let i = 0; i < 30; i++) {
      const r = await srv.call(i % 2 === 0 ? a.key : second, 'GET', '/keys/');
      expect(r.status, `request ${i + 1}`).toBe(200);
    }
    const third = (await srv.control.keys.create(a.name)).key;
    const limited = await srv.call(third, 'GET', '/keys/');
    expect(((await limited.clone().json()) as { error: { message: string } }).error.message).toContain('one user');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe('53400');
    expect((await srv.call(b.key, 'GET', '/keys/')).status).toBe(200);
  });
});

describe('statement timeout', () => {
  it('is 504 57014 after statementTimeoutMs', async () => {
    const { key } = await srv.user('slow');
    const started = Date.now();
    const r = await srv.query(key, 'SELECT pg_sleep(5)');
    expect(r.status).toBe(504);
    expect(r.body.error?.code).toBe('57014');
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('cannot be switched off for later requests by SET or set_config', async () => {
    const { key } = await srv.user('sneaky');
    expect((await srv.query(key, 'SET statement_timeout = 0')).status).toBe(200);
    expect((await srv.query(key, 'SELECT pg_sleep(3)')).status).toBe(504);
    expect((await srv.query(key, "SELECT set_config('statement_timeout', '0', false)")).status).toBe(200);
    expect((await srv.query(key, 'SELECT pg_sleep(3)')).status).toBe(504);
  });
});

describe('one request, one session', () => {
  it('a SET search_path or an open BEGIN does not reach the next request', async () => {
    const { key, name } = await srv.user('session');
    await srv.query(key, `CREATE SCHEMA "${name}/r"`);
    expect((await srv.query(key, `SET search_path TO "${name}/r"`)).status).toBe(200);
    expect((await srv.query(key, "SELECT current_setting('search_path') AS p")).body.data).toEqual([['public']]);
    expect((await srv.query(key, 'BEGIN')).body).toMatchObject({ command: 'BEGIN' });
    // Inside a transaction block now() would stay the time of BEGIN.
    const first = await srv.query(key, 'SELECT now()::text AS t');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await srv.query(key, 'SELECT now()::text AS t');
    expect(first.body.data?.[0]?.[0]).not.toBe(second.body.data?.[0]?.[0]);
  });

  it('a failed statement, COMMIT or ROLLBACK after a SET does not keep the setting', async () => {
    // The reset shares the statement's transaction: whatever ends that transaction, the next request resets again.
    const { key } = await srv.user('rollback');
    for (const ending of ['SELECT 1/0', 'ROLLBACK', 'COMMIT']) {
      expect((await srv.query(key, "SET work_mem = '7MB'")).status).toBe(200);
      await srv.query(key, ending);
      expect((await srv.query(key, 'SHOW work_mem')).body.data, ending).toEqual([['4MB']]);
    }
  });

  it('skips the reset only after a statement that cannot change a setting (what Postgres was sent, from pg_stat_activity)', async () => {
    const { key, name } = await srv.user('skip');
    await srv.query(key, `CREATE SCHEMA "${name}/r"`);
    await srv.query(key, `CREATE TABLE "${name}/r".t (a int)`);
    // One REST session for this user from here on (requests one at a time take the same one).
    const sent = async (sql: string): Promise<string> => {
      expect((await srv.query(key, sql)).status, sql).toBe(200);
      const { rows } = await srv.cluster.admin.query<{ query: string }>("SELECT query FROM pg_stat_activity WHERE usename = $1 AND application_name = 'repobase-rest'", [name]);
      expect(rows, sql).toHaveLength(1);
      return rows[0]!.query;
    };
    expect(await sent(`SELECT a FROM "${name}/r".t`)).toBe(`RESET ALL; SELECT a FROM "${name}/r".t`);
    expect(await sent('SELECT 1 AS one, now() IS NOT NULL AS t')).toBe('RESET ALL; SELECT 1 AS one, now() IS NOT NULL AS t');
    // After a setting-free statement: no reset.
    expect(await sent("SELECT current_setting('work_mem') AS w")).toBe("SELECT current_setting('work_mem') AS w");
    expect(await sent('SELECT count(*) FROM pg_catalog.pg_am')).toBe('SELECT count(*) FROM pg_catalog.pg_am');
    // A table of a repo may run user code (a view, row security, an operator): the next one resets.
    expect(await sent(`SELECT a FROM "${name}/r".t`)).toBe(`SELECT a FROM "${name}/r".t`);
    expect(await sent('SELECT 2 AS two')).toBe('RESET ALL; SELECT 2 AS two');
    expect(await sent("SELECT set_config('work_mem', '7MB', false) AS w")).toBe("SELECT set_config('work_mem', '7MB', false) AS w");
    expect(await sent('SHOW work_mem')).toBe('RESET ALL; SHOW work_mem');
  });

  it('a view or row security calling set_config leaves nothing for the next request', async () => {
    const { key, name } = await srv.user('hidden');
    await srv.query(key, `CREATE SCHEMA "${name}/r"`);
    expect((await srv.query(key, `CREATE VIEW "${name}/r".v AS SELECT set_config('work_mem', '7MB', false) AS w`)).status).toBe(200);
    for (const sql of [
      `CREATE TABLE "${name}/r".t (a int)`,
      `INSERT INTO "${name}/r".t VALUES (1)`,
      `ALTER TABLE "${name}/r".t ENABLE ROW LEVEL SECURITY`,
      `ALTER TABLE "${name}/r".t FORCE ROW LEVEL SECURITY`,
      `CREATE POLICY p ON "${name}/r".t USING (set_config('work_mem', '9MB', false) IS NOT NULL)`,
    ]) {
      expect((await srv.query(key, sql)).status, sql).toBe(200);
    }
    for (const [sql, changed] of [
      [`SELECT w FROM "${name}/r".v`, [['7MB']]],
      [`SELECT a, current_setting('work_mem') AS w FROM "${name}/r".t`, [[1, '9MB']]],
    ] as const) {
      expect((await srv.query(key, 'SELECT 1 AS clean')).status).toBe(200); // a setting-free statement before: no reset pending
      expect((await srv.query(key, sql)).body.data, sql).toEqual(changed);
      expect((await srv.query(key, "SELECT current_setting('work_mem') AS w")).body.data, sql).toEqual([['4MB']]);
    }
  });

  it('a function that turns standard_conforming_strings off does not change how the next statement is read', async () => {
    // The reset shares the statement's Query, which Postgres reads before it resets: the session
    // follows ParameterStatus and resets first when such a setting changed behind the policy's back.
    const { key, name } = await srv.user('lax');
    await srv.query(key, `CREATE SCHEMA "${name}/r"`);
    const fn = `CREATE FUNCTION "${name}/r".lax() RETURNS text LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('SET %s = off', 'standard_conforming_strings'); RETURN 'x'; END $$`;
    expect((await srv.query(key, fn)).status).toBe(200);
    const flipped = await srv.query(key, `SELECT "${name}/r".lax() AS f, current_setting('standard_conforming_strings') AS scs`);
    expect(flipped.body.data).toEqual([['x', 'off']]);
    const read = await srv.query(key, "SELECT 'a\\' AS v");
    expect(read.body.data).toEqual([['a\\']]);
    expect((await srv.query(key, "SELECT 'b\\' AS v")).body.data).toEqual([['b\\']]);
  });

  it('an error position counts from the start of the statement, after a reset as before', async () => {
    const { key } = await srv.user('position');
    for (let i = 0; i < 2; i++) {
      const r = await srv.query(key, 'SELECT 1 AS one, nosuchcolumn');
      expect(r.body.error).toMatchObject({ code: '42703', position: 18 });
    }
  });

  it('runs what Postgres refuses inside a transaction (VACUUM, CREATE INDEX CONCURRENTLY), settings still reset', async () => {
    const { key, name } = await srv.user('vacuum');
    await srv.query(key, `CREATE SCHEMA "${name}/r"`);
    expect((await srv.query(key, `CREATE TABLE "${name}/r".t (id int)`)).status).toBe(200);
    expect((await srv.query(key, "SET work_mem = '7MB'")).status).toBe(200);
    expect((await srv.query(key, `VACUUM "${name}/r".t`)).body).toMatchObject({ command: 'VACUUM' });
    expect((await srv.query(key, 'SHOW work_mem')).body.data).toEqual([['4MB']]);
    expect((await srv.query(key, "SET work_mem = '7MB'")).status).toBe(200);
    expect((await srv.query(key, `CREATE INDEX CONCURRENTLY t_id ON "${name}/r".t (id)`)).body).toMatchObject({ command: 'CREATE INDEX' });
    expect((await srv.query(key, `DROP INDEX CONCURRENTLY "${name}/r".t_id`)).body).toMatchObject({ command: 'DROP INDEX' });
    expect((await srv.query(key, 'SHOW work_mem')).body.data).toEqual([['4MB']]);
  });
});

describe('row cap', () => {
  it('ends a longer result with "truncated": true after maxResultRows rows', async () => {
    const { key } = await srv.user('many');
    const r = await srv.query(key, 'SELECT g FROM generate_series(1, 25) g');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ fields: { g: 'INTEGER' }, command: null, row_count: 10, truncated: true });
    expect(r.body.data).toEqual([[1], [2], [3], [4], [5], [6], [7], [8], [9], [10]]);
    const exact = await srv.query(key, 'SELECT g FROM generate_series(1, 10) g');
    expect(exact.body).toMatchObject({ command: 'SELECT', row_count: 10 });
    expect(exact.body.truncated).toBeUndefined();
    // The connection went back to the pool in a usable state (pool of one).
    expect((await srv.query(key, 'SELECT 1 AS one')).body.data).toEqual([[1]]);
  });

  it('tells CSV clients by the trailer X-Repobase-Truncated', async () => {
    const { key } = await srv.user('csvcap');
    const fetchCsv = (sql: string) =>
      new Promise<{ body: string; trailers: NodeJS.Dict<string> }>((resolve, reject) => {
        const req = request(`${srv.url}/api/v1beta/query/`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'text/csv' },
        });
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ body, trailers: res.trailers }));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ query_string: sql }));
      });
    const cut = await fetchCsv('SELECT g FROM generate_series(1, 25) g');
    expect(cut.body.split('\r\n')).toHaveLength(12); // header, 10 rows, final empty
    expect(cut.trailers['x-repobase-truncated']).toBe('true');
    const whole = await fetchCsv('SELECT g FROM generate_series(1, 3) g');
    expect(whole.body).toBe('g\r\n1\r\n2\r\n3\r\n');
    expect(whole.trailers['x-repobase-truncated']).toBe('false');
  });
});

describe('upstream down', () => {
  it('is 503 08006 when the user role cannot connect upstream', async () => {
    const port = await freePort();
    const down = await startRest({ cluster: { roleConnection: (role: string) => ({ host: '127.0.0.1', port, user: role, password: 'x', database: 'x' }) } });
    try {
      const { key } = await down.user('stranded');
      const r = await down.query(key, 'SELECT 1');
      expect(r.status).toBe(503);
      expect(r.body.error?.code).toBe('08006');
    } finally {
      await down.stop();
    }
  });
});
