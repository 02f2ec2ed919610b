/**
 * The web console: the JavaScript a first page loads (gzipped, from the built files: the entry
 * script and the modules it preloads) and the SQL editor's own chunk; log-in to the repo list
 * rendered, timed in Chromium on this machine (from pressing "Log in" to the list on screen); and
 * the grid's pages of a large table through `POST /query/` as the console sends them (keyset on
 * the primary key: the first page, and one 100 pages deep), against the plain first-page SELECT
 * through the same route, and a deep OFFSET page for contrast.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { packageRoot } from '../../src/shared/package-root.js';
import { REPO, type BenchEnv } from '../env.js';
import { launchBrowser } from '../lib/browser.js';
import { summarize, type Summary } from '../lib/stats.js';

export interface GridResult {
  rows: number;
  /** ms per request, p50 over the rounds: plain `SELECT * … LIMIT 100`, the grid's first page, its page 100 deep, OFFSET 9,900. */
  plainFirstPage: Summary;
  keysetFirstPage: Summary;
  keysetDeepPage: Summary;
  offsetDeepPage: Summary;
}

export interface WebResult {
  /** Gzipped bytes of the JavaScript the first page loads (entry + preloaded modules). */
  firstPageJsGzip: number;
  /** Gzipped bytes of the SQL editor's chunk (CodeMirror), loaded on that page only. */
  sqlEditorJsGzip: number;
  /** Every built asset: name → gzipped bytes. */
  assets: Record<string, number>;
  /** Milliseconds from "Log in" to the repo list rendered. */
  loginToList: Summary;
  grid: GridResult;
}

const WEB_DIR = join(packageRoot, 'dist', 'web');

/** The scripts index.html loads at once: its module script and modulepreload links. */
async function firstPageScripts(): Promise<string[]> {
  const html = await readFile(join(WEB_DIR, 'index.html'), 'utf8');
  const refs = [...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="([^"]+\.js)"/g)].map((m) => m[1]!);
  return [...new Set(refs)].map((r) => r.replace(/^\//, ''));
}

async function sizes(): Promise<{ firstPage: number; assets: Record<string, number> }> {
  const assets: Record<string, number> = {};
  for (const name of await readdir(join(WEB_DIR, 'assets'))) {
    assets[name] = gzipSync(await readFile(join(WEB_DIR, 'assets', name))).length;
  }
  let firstPage = 0;
  for (const script of await firstPageScripts()) firstPage += gzipSync(await readFile(join(WEB_DIR, script))).length;
  return { firstPage, assets };
}

const BIG = `"${REPO}"."web grid"`;

/** A table of `rows` rows with a primary key, made once per bench run (directly, as the admin). */
async function bigTable(env: BenchEnv, rows: number): Promise<void> {
  const admin = new pg.Client({ connectionString: env.adminUrl }); // the service's own database
  await admin.connect();
  try {
    await admin.query(`DROP TABLE IF EXISTS ${BIG}`);
    await admin.query(`CREATE TABLE ${BIG} (id bigint, customer text, amount numeric(12,2), placed timestamptz)`);
    await admin.query(`INSERT INTO ${BIG} SELECT g, 'customer ' || (g % 9973), (g % 100000) / 100.0, timestamptz '2024-01-01' + g * interval '1 second' FROM generate_series(1, ${rows}) g`);
    await admin.query(`ALTER TABLE ${BIG} ADD PRIMARY KEY (id)`);
    await admin.query(`ALTER TABLE ${BIG} OWNER TO bench`);
    await admin.query(`ANALYZE ${BIG}`);
  } finally {
    await admin.end();
  }
}

/** Timings of one statement through POST /query/ (ms each), after one unrecorded warm-up. */
async function timeQuery(env: BenchEnv, sql: string, rounds: number): Promise<Summary> {
  const times: number[] = [];
  for (let i = 0; i <= rounds; i++) {
    const start = performance.now();
    const res = await fetch(`${env.repobase.httpUrl}/api/v1beta/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.repobase.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query_string: sql }),
    });
    const body = (await res.json()) as { data?: unknown[] };
    if (!res.ok || body.data?.length !== 100) throw new Error(`grid query answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    if (i > 0) times.push(performance.now() - start);
  }
  return summarize(times);
}

async function runGrid(env: BenchEnv, rows: number, rounds: number, log: (s: string) => void): Promise<GridResult> {
  log(`web: a ${rows.toLocaleString('en-US')}-row table for the grid`);
  await bigTable(env, rows);
  // The statements the console's grid sends (web/src/table/statements.ts): keyset on the key.
  const page = (after: number | undefined) => `SELECT * FROM ${BIG}${after === undefined ? '' : ` WHERE ("id") > ('${after}')`} ORDER BY "id" LIMIT 100`;
  const result: GridResult = {
    rows,
    plainFirstPage: await timeQuery(env, `SELECT * FROM ${BIG} LIMIT 100`, rounds),
    keysetFirstPage: await timeQuery(env, page(undefined), rounds),
    keysetDeepPage: await timeQuery(env, page(9_900), rounds),
    offsetDeepPage: await timeQuery(env, `SELECT * FROM ${BIG} ORDER BY "id" LIMIT 100 OFFSET 9900`, rounds),
  };
  return result;
}

export async function runWeb(env: BenchEnv, opts: { logins: number; gridRows: number; gridRounds: number }, log: (s: string) => void): Promise<WebResult> {
  const { firstPage, assets } = await sizes();
  log(`web: first page JavaScript ${(firstPage / 1024).toFixed(1)} KB gzipped`);
  const sqlEditorJsGzip = Object.entries(assets).find(([n]) => n.startsWith('SqlEditorPage') && n.endsWith('.js'))?.[1] ?? NaN;
  const base = env.repobase.httpUrl;
  const name = `web_${Date.now().toString(36)}`;
  const password = 'bench password 1';
  const signup = await fetch(`${base}/api/v1beta/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: name, password }) });
  if (!signup.ok) throw new Error(`sign-up answered ${signup.status}: ${await signup.text()}`);
  const browser = await launchBrowser();
  const times: number[] = [];
  try {
    for (let i = 0; i < opts.logins + 1; i++) {
      const context = await browser.newContext({ baseURL: base });
      const page = await context.newPage();
      await page.goto('/login');
      await page.getByLabel('Username').fill(name);
      await page.getByLabel('Password').fill(password);
      const start = performance.now();
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('button', { name: 'New repo' }).or(page.getByRole('link', { name: 'New repo' })).first().waitFor();
      if (i > 0) times.push(performance.now() - start); // the first is a warm-up (cold server caches)
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const grid = await runGrid(env, opts.gridRows, opts.gridRounds, log);
  return { firstPageJsGzip: firstPage, sqlEditorJsGzip, assets, loginToList: summarize(times), grid };
}
