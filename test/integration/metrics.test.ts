/**
 * `GET /metrics` of a real service: the exposition text parses as Prometheus' text format, each
 * series moves by exactly what real clients did (wire statements allowed, denied and failing
 * upstream, REST requests, a failed log-in, a cancel with an unknown key, an upload), the states
 * are read live (a client inside a transaction), no label names a user or repo, and with two
 * worker processes every scrape answers the sum over both — on `metricsPort`, a port of its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { get } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/cluster.js';
import { freePort } from '../helpers/ports.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { upload } from './ingest-helpers.js';

/** Series name with its labels as written (`name{a="x"}`) → value; also the labels of each. */
interface Scrape {
  values: Map<string, number>;
  labelValues: string[];
  text: string;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"`;
const SAMPLE = new RegExp(`^(${NAME})(\\{(?:${LABEL}(?:,${LABEL})*,?)?\\})? ([+-]?(?:[0-9.]+(?:[eE][+-]?[0-9]+)?|[Nn][Aa][Nn]|[Ii][Nn][Ff](?:[Ii][Nn][Ii][Tt][Yy])?))( -?[0-9]+)?$`);
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/**
 * Parses the text exposition format strictly (version 0.0.4): `# HELP` and `# TYPE` lines, one
 * TYPE per metric before its samples, samples of declared metrics only (histograms' `_bucket`,
 * `_sum`, `_count`), no series twice. Throws at the first line that breaks a rule.
 */
function parseExposition(text: string): Scrape {
  const values = new Map<string, number>();
  const labelValues: string[] = [];
  const types = new Map<string, string>();
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      expect(meta[2]).toMatch(new RegExp(`^${NAME}$`));
      if (meta[1] === 'TYPE') {
        expect(TYPES.has(meta[3]!), line).toBe(true);
        expect(types.has(meta[2]!), `TYPE twice: ${line}`).toBe(false);
        types.set(meta[2]!, meta[3]!);
      }
      continue;
    }
    expect(line.startsWith('#'), line).toBe(false);
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const name = m[1]!;
    const base = name.replace(/_(bucket|sum|count)$/, '');
    expect(types.has(name) || types.get(base) === 'histogram' || types.get(base) === 'summary', `sample of an undeclared metric: ${line}`).toBe(true);
    const series = canonical(name + (m[2] ?? ''));
    expect(values.has(series), `series twice: ${series}`).toBe(false);
    // Values as Go's ParseFloat reads them (the format's rule): NaN and Inf in any case.
    const v = m[3]!.toLowerCase();
    values.set(series, v.endsWith('nan') ? NaN : v.endsWith('inf') || v.endsWith('infinity') ? (v.startsWith('-') ? -Infinity : Infinity) : Number(v));
    for (const l of (m[2] ?? '').matchAll(/="((?:[^"\\]|\\.)*)"/g)) labelValues.push(l[1]!);
  }
  return { values, labelValues, text };
}

/** `name{b="2",a="1"}` → `name{a="1",b="2"}`: series compared whatever order their labels were written in. */
function canonical(series: string): string {
  const brace = series.indexOf('{');
  if (brace < 0) return series;
  const labels = [...series.slice(brace + 1, -1).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => `${m[1]}="${m[2]}"`);
  return `${series.slice(0, brace)}{${labels.sort().join(',')}}`;
}

async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

/** The value of one series (0 when absent: a counter not yet moved). */
function at(s: Scrape, series: string): number {
  return s.values.get(canonical(series)) ?? 0;
}

/** How much each series moved between two scrapes. */
function delta(before: Scrape, after: Scrape, series: string): number {
  return at(after, series) - at(before, series);
}

function client(svc: TestService, user: string, key: string): pg.Client {
  const c = new pg.Client(svc.pgOptions(user, key));
  c.on('error', () => undefined);
  return c;
}

/** A CancelRequest on a connection of its own; resolves once the server closed it. */
function sendCancel(port: number, processId: number, secretKey: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      const msg = Buffer.alloc(16);
      msg.writeInt32BE(16, 0);
      msg.writeInt32BE(80877102, 4);
      msg.writeInt32BE(processId, 8);
      msg.writeInt32BE(secretKey, 12);
      socket.write(msg);
    });
    socket.on('error', reject);
    socket.on('close', () => resolve());
  });
}

describe('GET /metrics of one process', () => {
  let svc: TestService;
  let alice: { name: string; key: string };
  let repo: string;
  let metricsUrl: string;

  beforeAll(async () => {
    svc = await startTestService();
    alice = await svc.user('alice');
    repo = `${alice.name}/sales`;
    await svc.control.createRepo(repo);
    metricsUrl = `${svc.httpUrl}/metrics`;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('moves each series by what the clients did, reads states live, and names no user or repo', async () => {
    const before = await scrape(metricsUrl);
    expect(svc.metricsUrl).toBe(metricsUrl);

    // Wire: 3 allowed (CREATE, INSERT, SELECT), 1 denied by the policy, 1 failing upstream.
    const c = client(svc, alice.name, alice.key);
    await c.connect();
    await c.query(`CREATE TABLE "${repo}".t (a int)`);
    await c.query(`INSERT INTO "${repo}".t VALUES (1), (2)`);
    expect((await c.query(`SELECT count(*)::int AS n FROM "${repo}".t`)).rows[0].n).toBe(2);
    await expect(c.query('CREATE ROLE metrics_intruder')).rejects.toMatchObject({ code: '42501' });
    await expect(c.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });

    // A failed wire log-in, and a cancel with this client's process id but a wrong secret.
    const bad = client(svc, alice.name, 'rb_not_a_key');
    await expect(bad.connect()).rejects.toMatchObject({ code: '28P01' });
    const { processID, secretKey } = c as unknown as { processID: number; secretKey: number };
    await sendCancel(svc.pgPort, processID, secretKey ^ 1);

    // REST: one allowed, one failing upstream, one denied, one with a bad key; an upload of 3 rows.
    const query = (key: string, sql: string) =>
      fetch(`${svc.httpUrl}/api/v1beta/query/`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ query_string: sql }) });
    expect((await query(alice.key, 'SELECT 1')).status).toBe(200);
    expect((await query(alice.key, 'SELECT 1/0')).status).toBe(400);
    expect((await query(alice.key, 'CREATE ROLE metrics_intruder')).status).toBe(403);
    expect((await query('rb_not_a_key', 'SELECT 1')).status).toBe(401);
    const csv = 'id,v\n1,a\n2,b\n3,c\n';
    const up = await upload(svc, alice.key, { repo, table_name: 'uploaded' }, { name: 'three.csv', data: csv });
    expect(up.status, JSON.stringify(up.body)).toBe(200);

    // A transaction left open: its client counts as idle_in_transaction while the scrape runs.
    await c.query('BEGIN');
    const after = await scrape(metricsUrl);
    expect(at(after, 'repobase_wire_clients{state="idle_in_transaction"}')).toBe(1);
    expect(at(after, 'repobase_wire_clients{state="active"}')).toBe(0);
    expect(at(after, 'repobase_upstream_sessions{pool="wire",state="active"}')).toBe(1);
    await c.query('COMMIT');
    const idle = await scrape(metricsUrl);
    expect(at(idle, 'repobase_wire_clients{state="idle"}')).toBe(1);
    expect(at(idle, 'repobase_wire_clients{state="idle_in_transaction"}')).toBe(0);

    const d = (series: string) => delta(before, after, series);
    expect(d('repobase_statements_total{front_end="wire",outcome="allowed"}')).toBe(5); // + the 1/0 and BEGIN
    expect(d('repobase_statements_total{front_end="wire",outcome="denied"}')).toBe(1);
    expect(d('repobase_statements_total{front_end="rest",outcome="allowed"}')).toBe(2);
    expect(d('repobase_statements_total{front_end="rest",outcome="denied"}')).toBe(1);
    expect(d('repobase_errors_total{front_end="wire",origin="policy",class="42"}')).toBe(1);
    expect(d('repobase_errors_total{front_end="wire",origin="upstream",class="22"}')).toBe(1);
    expect(d('repobase_errors_total{front_end="wire",origin="proxy",class="28"}')).toBe(1);
    expect(d('repobase_errors_total{front_end="rest",origin="policy",class="42"}')).toBe(1);
    expect(d('repobase_errors_total{front_end="rest",origin="upstream",class="22"}')).toBe(1);
    expect(d('repobase_errors_total{front_end="rest",origin="proxy",class="22"}')).toBe(0);
    expect(d('repobase_errors_total{front_end="rest",origin="proxy",class="28"}')).toBe(1);
    expect(d('repobase_auth_failures_total{front_end="wire"}')).toBe(1);
    expect(d('repobase_auth_failures_total{front_end="rest"}')).toBe(1);
    expect(d('repobase_auth_failures_total{front_end="console"}')).toBe(0);
    expect(d('repobase_wire_cancel_requests_total{outcome="unknown"}')).toBe(1);
    expect(d('repobase_wire_cancel_requests_total{outcome="forwarded"}')).toBe(0);
    expect(d('repobase_uploads_total{outcome="done"}')).toBe(1);
    expect(d('repobase_uploads_total{outcome="failed"}')).toBe(0);
    expect(d('repobase_upload_rows_total')).toBe(3);
    expect(d('repobase_upload_bytes_total')).toBe(csv.length);
    expect(d('repobase_http_requests_total{method="POST",route="/api/v1beta/query/",status="200"}')).toBe(1);
    expect(d('repobase_http_requests_total{method="POST",route="/api/v1beta/query/",status="400"}')).toBe(1);
    expect(d('repobase_http_requests_total{method="POST",route="/api/v1beta/query/",status="403"}')).toBe(1);
    expect(d('repobase_http_requests_total{method="POST",route="/api/v1beta/query/",status="401"}')).toBe(1);
    expect(d('repobase_http_requests_total{method="GET",route="/metrics",status="200"}')).toBe(1); // the scrape before
    expect(d('repobase_http_request_duration_seconds_count{method="POST",route="/api/v1beta/query/"}')).toBe(4);
    expect(d('repobase_http_request_duration_seconds_bucket{method="POST",route="/api/v1beta/query/",le="+Inf"}')).toBe(4);
    expect(d('repobase_bytes_total{front_end="wire",direction="in"}')).toBeGreaterThan(100);
    expect(d('repobase_bytes_total{front_end="wire",direction="out"}')).toBeGreaterThan(100);
    expect(d('repobase_policy_cache_lookups_total{result="miss"}')).toBeGreaterThan(0);
    expect(at(after, 'repobase_process_resident_memory_bytes')).toBeGreaterThan(0);

    // Repeated statements are decided from the policy's cache.
    await c.query('SELECT 42');
    const hits = at(await scrape(metricsUrl), 'repobase_policy_cache_lookups_total{result="hit"}');
    await c.query('SELECT 42');
    expect(at(await scrape(metricsUrl), 'repobase_policy_cache_lookups_total{result="hit"}')).toBe(hits + 1);

    // Nothing in the text, labels included, names the user or the repo.
    for (const v of after.labelValues) expect(v).not.toContain(alice.name);
    expect(after.text).not.toContain(alice.name);
    expect(after.text).not.toContain('sales');
    await c.end();
  });

  it('counts a failed console log-in and a failed upload', async () => {
    const before = await scrape(metricsUrl);
    const login = await fetch(`${svc.httpUrl}/api/v1beta/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: svc.httpUrl },
      body: JSON.stringify({ username: alice.name, password: 'not the password' }),
    });
    expect(login.status).toBe(401);
    const bad = await upload(svc, alice.key, { repo, table_name: 'broken' }, { name: 'bad.csv', data: 'a,b\n1,2\n3\n' });
    expect(bad.status).toBe(400);
    const after = await scrape(metricsUrl);
    expect(delta(before, after, 'repobase_auth_failures_total{front_end="console"}')).toBe(1);
    expect(delta(before, after, 'repobase_uploads_total{outcome="failed"}')).toBe(1);
    expect(delta(before, after, 'repobase_http_requests_total{method="POST",route="/api/v1beta/auth/login",status="401"}')).toBe(1);
  });
});

/** A GET on a connection of its own, so that successive scrapes reach the workers in turn. */
function getOnce(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`status ${res.statusCode}: ${text}`))));
    }).on('error', reject);
  });
}

describe('GET /metrics with two worker processes, on metricsPort', () => {
  let env: Record<string, string>;
  let dataDir: string;
  let primary: ChildProcess;
  let output = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'repobase-metrics-'));
    env = {
      REPOBASE_UPSTREAM_URL: await createTestDatabase(),
      REPOBASE_DATA_DIR: dataDir,
      REPOBASE_SECRET: randomBytes(16).toString('hex'),
      REPOBASE_HTTP_PORT: String(await freePort()),
      REPOBASE_PG_PORT: String(await freePort()),
      REPOBASE_METRICS_PORT: String(await freePort()),
      REPOBASE_WORKERS: '2',
    };
    primary = spawn(process.execPath, [BIN, 'serve'], { env: { PATH: process.env.PATH, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    primary.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    primary.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    for (const start = Date.now(); !output.includes('repobase is running (2 workers)'); await new Promise((r) => setTimeout(r, 100))) {
      if (Date.now() - start > 60_000 || primary.exitCode !== null) throw new Error(`serve did not start:\n${output}`);
    }
  });
  afterAll(async () => {
    if (primary && primary.exitCode === null) process.kill(-primary.pid!, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers the sum over both workers, whichever one a scrape reaches', async () => {
    const user = `metrics_${randomBytes(3).toString('hex')}`;
    const created = await runCli(['user', 'create', user], env);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    // Connections are handed to the workers in turn: these land on both, and stay idle.
    const clients = Array.from({ length: 4 }, () => {
      const c = new pg.Client({ host: '127.0.0.1', port: Number(env.REPOBASE_PG_PORT), user, password: key, database: 'repobase' });
      c.on('error', () => undefined);
      return c;
    });
    try {
      for (const c of clients) await c.connect();
      for (const c of clients) for (let i = 0; i < 3; i++) await c.query('SELECT 1');
      const url = `http://127.0.0.1:${env.REPOBASE_METRICS_PORT}/metrics`;
      // Each scrape is a connection of its own: in turn they reach one worker, then the other.
      // Either worker alone holds about half of it all; each scrape must show the whole.
      for (let i = 0; i < 4; i++) {
        const s = parseExposition(await getOnce(url));
        expect(at(s, 'repobase_statements_total{front_end="wire",outcome="allowed"}')).toBe(12);
        expect(at(s, 'repobase_wire_clients{state="idle"}')).toBe(4);
        // Pooling by transaction: idle clients hold no backend; each worker keeps what served them, idle.
        expect(at(s, 'repobase_upstream_sessions{pool="wire",state="active"}')).toBe(0);
        expect(at(s, 'repobase_upstream_sessions{pool="wire",state="idle"}')).toBeGreaterThanOrEqual(2);
        expect(at(s, 'repobase_upstream_sessions{pool="wire",state="idle"}')).toBeLessThanOrEqual(4);
        expect(s.text).not.toContain(user);
      }
      // With a port of its own, the metrics are not on the HTTP port; that port serves nothing else.
      expect((await fetch(`http://127.0.0.1:${env.REPOBASE_HTTP_PORT}/metrics`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${env.REPOBASE_METRICS_PORT}/other`)).status).toBe(404);
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    }
  });
});
