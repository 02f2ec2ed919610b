/**
 * The SQL editor's queries in the background, in a real Chromium walked by role and label: Run in
 * background → the History shows it running, then succeeded → its result opens a page at a time
 * (Next page) → Download CSV of the stored result, every value exact → Re-run runs it again →
 * Cancel stops one in Postgres → a statement run the ordinary way is in the History too. axe-core
 * on every state; screenshots under test-results/screenshots/console-queries/.
 */
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, launchBrowser, screenshot, screenshotDir } from '../helpers/browser.js';
import { startTestService, type TestService } from '../helpers/service.js';

const shots = screenshotDir('console-queries');
const PASSWORD = 'correct horse battery';
const ROWS = 2500;

let svc: TestService;
let browser: Browser;
let page: Page;
let user: string;
let admin: pg.Client;

/** The History panel. */
const history = () => page.getByRole('region', { name: 'History' });
/** The History's entries of `sql`, newest first. */
const entries = (sql: string): Locator => history().getByRole('listitem').filter({ hasText: sql });

async function typeStatement(sql: string): Promise<void> {
  const editor = page.getByRole('textbox', { name: 'SQL' });
  await editor.click();
  await page.keyboard.press('Control+a');
  await page.keyboard.type(sql);
}

beforeAll(async () => {
  svc = await startTestService();
  browser = await launchBrowser();
  user = `quinn_${Math.random().toString(36).slice(2, 7)}`;
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
  const context = await browser.newContext({ baseURL: svc.httpUrl, acceptDownloads: true });
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
  await page.goto('/signup');
  await page.getByLabel('Username').fill(user);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.waitForURL((u) => u.pathname === '/');
}, 60_000);

afterAll(async () => {
  await admin?.end();
  await browser?.close();
  await svc?.stop();
});

describe('queries in the background', () => {
  const slow = `SELECT g AS n, 'item ' || g AS label, (g * 0.5)::numeric(8,1) AS half FROM generate_series(1, ${ROWS}) g, pg_sleep(2)`;

  it('Run in background: the History shows it running, then its result opens a page at a time', async () => {
    await page.goto('/sql');
    await typeStatement(slow);
    await page.getByRole('button', { name: 'Run in background' }).click();
    await expect.poll(() => page.getByText('Sent to run in the background').isVisible()).toBe(true);
    await expect.poll(() => entries(slow).first().getByText('Running').isVisible()).toBe(true);
    await expect.poll(() => page.getByText(/^Running for/).isVisible()).toBe(true);
    await screenshot(page, shots, '01-running');
    await expectAccessible(page, 'a query running in the background');

    await expect.poll(() => entries(slow).first().getByText('Succeeded').isVisible(), { timeout: 20_000 }).toBe(true);
    await expect.poll(() => page.getByText(`Rows 1–1,000 of ${ROWS.toLocaleString('en')}`).isVisible()).toBe(true);
    expect(await entries(slow).first().getByText(`${ROWS.toLocaleString('en')} rows`).isVisible()).toBe(true);
    await expect.poll(() => page.getByRole('cell', { name: 'item 1', exact: true }).isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(() => page.getByText(`Rows 1,001–2,000 of ${ROWS.toLocaleString('en')}`).isVisible()).toBe(true);
    await expect.poll(() => page.getByRole('cell', { name: 'item 1001', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('cell', { name: '500.5', exact: true }).isVisible()).toBe(true);
    await screenshot(page, shots, '02-result-page-2');
    await expectAccessible(page, 'a stored result, page 2');
  }, 60_000);

  it('Download CSV saves the stored result with every value as Postgres printed it', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), entries(slow).first().getByRole('button', { name: 'Download result as CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^query-\d{8}-\d{6}\.csv$/);
    const text = await readFile((await download.path())!, 'utf8');
    const expected = ['n,label,half', ...Array.from({ length: ROWS }, (_, i) => `${i + 1},item ${i + 1},${((i + 1) * 0.5).toFixed(1)}`)].join('\r\n') + '\r\n';
    expect(text === expected).toBe(true);
  });

  it('Re-run runs it again in the background', async () => {
    await entries(slow).first().getByRole('button', { name: 'Re-run' }).click();
    await expect.poll(() => entries(slow).count()).toBe(2);
    await expect.poll(async () => (await entries(slow).allInnerTexts()).every((t) => t.includes('Succeeded')), { timeout: 20_000 }).toBe(true);
    const { rows } = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM _repobase.queries WHERE user_name = $1 AND async AND status = 'succeeded' AND query_string = $2", [user, slow]);
    expect(rows[0]!.n).toBe(2);
  }, 60_000);

  it('Cancel in the History stops a running query in Postgres', async () => {
    const sleeper = 'SELECT pg_sleep(60) AS nap';
    await typeStatement(sleeper);
    await page.getByRole('button', { name: 'Run in background' }).click();
    const sleeping = async () => (await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND query LIKE '%pg_sleep(60) AS nap'", [user])).rows[0]!.n;
    await expect.poll(sleeping).toBe(1);
    await expect.poll(() => entries(sleeper).first().getByRole('button', { name: 'Cancel' }).isVisible()).toBe(true);
    await entries(sleeper).first().getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(sleeping, { timeout: 5_000 }).toBe(0);
    await expect.poll(() => entries(sleeper).first().getByText('Cancelled').isVisible()).toBe(true);
    await expect.poll(() => page.getByText(/^Cancelled in/).isVisible()).toBe(true);
    await screenshot(page, shots, '03-cancelled');
  }, 30_000);

  it('lists statements run the ordinary way too, and opens them', async () => {
    await typeStatement('SELECT 1/0 AS boom');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('division by zero');
    await expect.poll(() => entries('SELECT 1/0 AS boom').first().getByText('Failed').isVisible()).toBe(true);
    // The entry says what failed, not only its SQLSTATE.
    await expect.poll(() => entries('SELECT 1/0 AS boom').first().getByText(/division by zero \(22012\)/).isVisible()).toBe(true);
    await typeStatement('SELECT 42 AS answer');
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => entries('SELECT 42 AS answer').first().getByText('Succeeded').isVisible()).toBe(true);
    expect(await entries('SELECT 42 AS answer').first().getByText('in background').count()).toBe(0);
    await entries('SELECT 42 AS answer').first().getByRole('button', { name: 'Open' }).click();
    await expect.poll(() => page.getByText(/its result was not kept: Re-run it to see it/).isVisible()).toBe(true);
    await entries('SELECT 1/0 AS boom').first().getByRole('button', { name: 'Open' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('22012');
    await screenshot(page, shots, '04-history-failed');
    await expectAccessible(page, 'the history with a failed statement opened');
  }, 30_000);
});
