/**
 * The web console: the JavaScript a first page loads (gzipped, from the built files: the entry
 * script and the modules it preloads), and log-in to the repo list rendered, timed in Chromium
 * on this machine (from pressing "Log in" to the list being on screen).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { packageRoot } from '../../src/shared/package-root.js';
import type { BenchEnv } from '../env.js';
import { launchBrowser } from '../lib/browser.js';
import { summarize, type Summary } from '../lib/stats.js';

export interface WebResult {
  /** Gzipped bytes of the JavaScript the first page loads (entry + preloaded modules). */
  firstPageJsGzip: number;
  /** Every built asset: name → gzipped bytes. */
  assets: Record<string, number>;
  /** Milliseconds from "Log in" to the repo list rendered. */
  loginToList: Summary;
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

export async function runWeb(env: BenchEnv, opts: { logins: number }, log: (s: string) => void): Promise<WebResult> {
  const { firstPage, assets } = await sizes();
  log(`web: first page JavaScript ${(firstPage / 1024).toFixed(1)} KB gzipped`);
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
  return { firstPageJsGzip: firstPage, assets, loginToList: summarize(times) };
}
