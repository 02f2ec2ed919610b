/**
 * psql and pgbench (the real Debian clients) through the wire front end, over TLS.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let repoUrl: string;
let work: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], input?: string, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { env: { ...process.env, PGCONNECT_TIMEOUT: '10' }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

const psql = (url: string, ...args: string[]) => run('psql', [url, '-X', '-v', 'ON_ERROR_STOP=1', ...args]);

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'sales' });
  repoUrl = svc.pgUrl(alice.name, alice.key, `${alice.name}/sales`, 'sslmode=require');
  work = await mkdtemp(join(tmpdir(), 'repobase-psql-'));
  const setup = await psql(repoUrl, '-c', 'CREATE TABLE "Orders 2024" (id serial primary key, customer text not null, amount numeric(10,2))', '-c', "INSERT INTO \"Orders 2024\" (customer, amount) VALUES ('ann', 12.50), ('bo', 7)", '-c', 'CREATE FUNCTION total() RETURNS numeric LANGUAGE sql AS $$ SELECT sum(amount) FROM "Orders 2024" $$');
  expect(setup.stderr).toBe('');
});

afterAll(async () => {
  await svc.stop();
});

describe('psql over TLS', () => {
  it('connects with sslmode=require and shows the encryption', async () => {
    const r = await psql(repoUrl, '-c', '\\conninfo');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/SSL connection \(protocol: TLSv1\.[23]/);
  });

  it('\\dt, \\d, \\d+, \\dn, \\du, \\df answer', async () => {
    const dt = await psql(repoUrl, '-c', '\\dt');
    expect(dt.stderr).toBe('');
    expect(dt.stdout).toContain('Orders 2024');
    const d = await psql(repoUrl, '-c', '\\d "Orders 2024"');
    expect(d.stdout).toContain('customer');
    expect(d.stdout).toContain('numeric(10,2)');
    const dplus = await psql(repoUrl, '-c', '\\d+ "Orders 2024"');
    expect(dplus.stdout).toContain('Access method');
    const dn = await psql(repoUrl, '-c', '\\dn');
    expect(dn.stdout).toContain(`${alice.name}/sales`);
    for (const cmd of ['\\du', `\\df "${alice.name}/sales".*`]) {
      const r = await psql(repoUrl, '-c', cmd);
      expect(r.stderr, cmd).toBe('');
      expect(r.code, cmd).toBe(0);
    }
    const df = await psql(repoUrl, '-c', `\\df "${alice.name}/sales".*`);
    expect(df.stdout).toContain('total');
  });

  it('\\l answers exactly as the upstream Postgres answers the same psql', async () => {
    // psql only knows catalogs up to its own version: Debian 12's psql 15 asks a Postgres 17
    // for pg_database.daticulocale (renamed in 17) and fails the same way on a direct connection.
    const direct = await psql(svc.config.upstreamUrl, '-c', '\\l');
    const proxied = await psql(repoUrl, '-c', '\\l');
    expect(proxied.code).toBe(direct.code);
    expect(proxied.stderr).toBe(direct.stderr);
    expect(proxied.stdout.includes('List of databases')).toBe(direct.stdout.includes('List of databases'));
  });

  it('\\copy in and out', async () => {
    const file = join(work, 'orders.csv');
    await writeFile(file, 'id,customer,amount\n10,cy,1.25\n11,di,2.50\n');
    const load = await psql(repoUrl, '-c', `\\copy "Orders 2024" FROM '${file}' WITH (FORMAT csv, HEADER true)`);
    expect(load.stdout.trim()).toBe('COPY 2');
    const out = join(work, 'out.csv');
    const dump = await psql(repoUrl, '-c', `\\copy (SELECT customer, amount FROM "Orders 2024" ORDER BY id) TO '${out}' WITH (FORMAT csv)`);
    expect(dump.stdout.trim()).toBe('COPY 4');
    expect(await readFile(out, 'utf8')).toBe('ann,12.50\nbo,7.00\ncy,1.25\ndi,2.50\n');
  });

  it('Ctrl-C cancels pg_sleep(30) within a second', async () => {
    const child = spawn('psql', [repoUrl, '-X', '-c', 'SELECT pg_sleep(30)'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise((r) => setTimeout(r, 700));
    const sent = Date.now();
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(Date.now() - sent).toBeLessThan(1000);
    expect(code).not.toBe(0);
    expect(stderr).toContain('canceling statement due to user request');
  });
});

describe('pgbench through repobase', () => {
  it('initialises, then runs -S in simple, extended and prepared modes and TPC-B with no failures', async () => {
    const url = svc.pgUrl(alice.name, alice.key, `${alice.name}/sales`, 'sslmode=disable');
    const init = await run('pgbench', ['-i', '-s', '1', '-q', url]);
    expect(init.stderr).toContain('done');
    expect(init.code).toBe(0);
    for (const args of [['-S', '-M', 'simple'], ['-S', '-M', 'extended'], ['-S', '-M', 'prepared'], ['-M', 'simple']]) {
      const r = await run('pgbench', [...args, '-c', '4', '-j', '2', '-t', '200', url]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/number of transactions actually processed: 800\/800/);
      expect(r.stdout).toMatch(/number of failed transactions: 0 /);
    }
  });
});
