/**
 * The web console in a real Chromium, walked as a person walks it — by role and label: sign up,
 * log in and out, create a repo, share it, Connect → API / SDK → Create key (the key works at
 * once with psql and the REST API, and is never shown again), delete a repo; with hostile names
 * rendered inert, another user's private repo indistinguishable from a missing one, CSRF and
 * session fixation refused, log-out ending every tab, the main flow by keyboard alone, axe-core on
 * every page and a screenshot of each under test-results/screenshots/console/.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { expectAccessible, launchBrowser, screenshot, screenshotDir } from '../helpers/browser.js';
import { startTestService, type TestService } from '../helpers/service.js';

const run = promisify(execFile);
const shots = screenshotDir('console');
const HOSTILE = '<img src=x onerror=alert(1)>';
const PASSWORD = 'correct horse battery';

let svc: TestService;
let browser: Browser;
let suffix: string;
/** Dialogs (alert, confirm) any page opened: a hostile name that ran would show up here. */
const alerts: string[] = [];

interface Person {
  name: string;
  context: BrowserContext;
  page: Page;
}

async function newPage(context?: BrowserContext): Promise<Page> {
  const ctx = context ?? (await browser.newContext({ baseURL: svc.httpUrl }));
  const page = await ctx.newPage();
  page.on('dialog', (d) => {
    alerts.push(d.message());
    void d.dismiss();
  });
  return page;
}

async function signUp(base: string): Promise<Person> {
  const name = `${base}_${suffix}`;
  const page = await newPage();
  await page.goto('/signup');
  await page.getByLabel('Username').fill(name);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.waitForURL((u) => u.pathname === '/');
  return { name, context: page.context(), page };
}

async function logIn(page: Page, name: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Username').fill(name);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((u) => u.pathname === '/');
}

/** Presses Tab until the focused element's accessible name (roughly computed) is `name`. */
async function tabTo(page: Page, name: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press('Tab');
    const focused = (await page.evaluate(
      `(() => { const e = document.activeElement; if (!e) return ''; const l = e.getAttribute('aria-label') || (e.labels && e.labels[0] ? e.labels[0].textContent : '') || e.textContent || ''; return l.trim(); })()`,
    )) as string;
    if (focused === name) return;
  }
  throw new Error(`Tab never reached "${name}"`);
}

let alice: Person;
let bob: Person;

beforeAll(async () => {
  svc = await startTestService();
  browser = await launchBrowser();
  suffix = Math.random().toString(36).slice(2, 7);
});

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

describe('the web console', () => {
  it('signs up, shows the empty repo list, logs out and in again', async () => {
    const page = await newPage();
    await page.goto('/');
    await page.waitForURL((u) => u.pathname === '/login');
    await expect.poll(() => page.getByRole('button', { name: 'Log in' }).isVisible()).toBe(true);
    await screenshot(page, shots, '01-login');
    await expectAccessible(page, 'log-in page');
    await page.goto('/signup');
    await expect.poll(() => page.getByRole('button', { name: 'Sign up' }).isVisible()).toBe(true);
    await expectAccessible(page, 'sign-up page');
    await screenshot(page, shots, '02-signup');
    await page.context().close();

    alice = await signUp('alice');
    await expect.poll(() => alice.page.getByRole('button', { name: 'New repo' }).or(alice.page.getByRole('link', { name: 'New repo' })).first().isVisible()).toBe(true);
    await screenshot(alice.page, shots, '03-repos-empty');
    await expectAccessible(alice.page, 'repo list');
    await alice.page.getByRole('button', { name: 'Log out' }).click();
    await alice.page.waitForURL((u) => u.pathname === '/login');
    await logIn(alice.page, alice.name);
  });

  it('creates a repo whose hostile description renders as text', async () => {
    const { page } = alice;
    await page.getByRole('button', { name: 'New repo' }).or(page.getByRole('link', { name: 'New repo' })).first().click();
    await page.waitForURL((u) => u.pathname === '/new');
    await page.getByLabel('Name').fill('sales');
    await page.getByLabel('Description').fill(HOSTILE);
    await expectAccessible(page, 'new repo form');
    await screenshot(page, shots, '04-new-repo');
    await page.getByRole('button', { name: 'Create repo' }).click();
    await page.waitForURL((u) => u.pathname === `/${alice.name}/sales`);
    await expect.poll(() => page.getByText(HOSTILE).first().isVisible()).toBe(true);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(alerts).toEqual([]);
    await screenshot(page, shots, '05-repo');
    await expectAccessible(page, 'repo page');
  });

  it('lists tables with hostile names as text', async () => {
    const res = await alice.page.request.post('/api/v1beta/query/', {
      data: { query_string: `CREATE TABLE "${alice.name}/sales"."<img src=x onerror=alert(2)>" ("<b>c</b>" int, amount numeric(10,2))` },
      headers: { 'x-csrf-token': await csrf(alice.page) },
    });
    expect(res.status()).toBe(200);
    await alice.page.reload();
    await expect.poll(() => alice.page.getByText('<img src=x onerror=alert(2)>').first().isVisible()).toBe(true);
    await expect.poll(() => alice.page.getByText('<b>c</b>').first().isVisible()).toBe(true);
    expect(await alice.page.locator('img[src="x"], b').count()).toBe(0);
    expect(alerts).toEqual([]);
  });

  it('shares the repo; the collaborator sees it with their permission', async () => {
    bob = await signUp('bob');
    const { page } = alice;
    await page.getByLabel('User name').fill(bob.name);
    await page.getByLabel('Permission').selectOption('read');
    await page.getByRole('button', { name: 'Add collaborator' }).click();
    await expect.poll(() => page.getByRole('button', { name: `Remove ${bob.name}` }).isVisible()).toBe(true);
    await screenshot(page, shots, '06-shared');
    await bob.page.goto('/');
    await expect.poll(() => bob.page.getByRole('link', { name: `${alice.name}/sales` }).isVisible()).toBe(true);
    await expect.poll(() => bob.page.getByText('Can read').first().isVisible()).toBe(true);
    await screenshot(bob.page, shots, '07-repos-shared-with-bob');
    await expectAccessible(bob.page, 'repo list with a shared repo');
  });

  it('the owner changes description and visibility; another user browses a public repo by URL, read-only', async () => {
    const { page } = alice;
    await page.goto(`/${alice.name}/sales`);
    await page.getByRole('textbox', { name: 'Description' }).fill('Orders of 2024');
    await page.getByRole('radio', { name: /^Public/ }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByText('Saved.').isVisible()).toBe(true);
    expect(await svc.control.getRepo({ owner: alice.name, repo: 'sales' })).toMatchObject({ isPrivate: false, description: 'Orders of 2024' });
    const { page: carol } = await signUp('erin'); // no collaborator: the repo is readable only as public
    await carol.goto(`/${alice.name}/sales`);
    await expect.poll(() => carol.getByRole('heading', { name: `${alice.name}/sales` }).isVisible()).toBe(true);
    expect(await carol.getByRole('button', { name: 'Delete repo' }).count()).toBe(0);
    expect(await carol.getByRole('button', { name: 'Save' }).count()).toBe(0);
    await carol.context().close();
    // Back to private for the tests below.
    await page.getByRole('radio', { name: /^Private/ }).check();
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await svc.control.getRepo({ owner: alice.name, repo: 'sales' }))?.isPrivate).toBe(true);
  });

  it('Connect → API / SDK → Create key: the key works at once with psql and the REST API, and is shown once', async () => {
    const { page } = alice;
    await page.goto(`/${alice.name}/sales`);
    await page.getByRole('main').getByRole('button', { name: 'Connect' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.getByRole('tab', { name: 'API / SDK' }).getAttribute('aria-selected')).toBe('true');
    await expectAccessible(page, 'Connect dialog');
    // Before a key is made here, the snippets carry a placeholder, not a secret.
    const before = (await dialog.locator('code').allTextContents()).find((c) => c.trim().startsWith('postgresql://'));
    expect(before).toContain('<API_KEY>');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const shown = dialog.getByRole('textbox', { name: 'API key', exact: true });
    await expect.poll(() => shown.inputValue()).toMatch(/^rb_/);
    const key = await shown.inputValue();
    await screenshot(page, shots, '08-connect-key');

    // The connection URL shown, with the new key in it, works with psql as it is.
    const codes = await dialog.locator('code').allTextContents();
    const url = codes.map((c) => c.trim()).find((c) => c.startsWith('postgresql://'));
    expect(url).toContain(key);
    expect(url).toContain(`/${alice.name}%2Fsales`);
    // On a repo's page the key reaches that repo only (read and write): its own role upstream.
    const { stdout } = await run('psql', [url!, '-XAtc', 'SELECT current_user, current_schemas(false)']);
    expect(stdout.trim()).toBe(`${alice.name}#${key.split('_')[1]}|{${alice.name}/sales}`);
    const rest = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query_string: 'SELECT 1 AS one' }),
    });
    expect(await rest.json()).toMatchObject({ data: [[1]] });

    // Shown once: gone when the dialog closes, in no page and no answer afterwards.
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.count()).toBe(0);
    await page.getByRole('main').getByRole('button', { name: 'Connect' }).click();
    await expect.poll(() => page.getByRole('dialog').getByRole('button', { name: 'Create key' }).isVisible()).toBe(true);
    expect(await page.content()).not.toContain(key);
    const keys = await page.request.get('/api/v1beta/keys/');
    expect(await keys.text()).not.toContain(key.slice(-12));
    await page.keyboard.press('Escape');
  });

  it('Connect on a repo page makes a named, expiring, read-only key for that repo; the key list shows what each key reaches, and which expired', async () => {
    const { page } = alice;
    // A key that expires at once, made elsewhere: the list marks it.
    await svc.control.keys.create(alice.name, { name: 'old report', repos: [`${alice.name}/sales`], access: 'read', expiresAt: new Date(Date.now() + 500) });
    await new Promise((r) => setTimeout(r, 700));
    await page.goto(`/${alice.name}/sales`);
    await page.getByRole('main').getByRole('button', { name: 'Connect' }).click();
    const dialog = page.getByRole('dialog');
    const form = dialog.getByRole('form', { name: 'New API key' });
    await form.getByRole('textbox', { name: 'Key name' }).fill('dashboard');
    // The repo of the page is preselected; read only, for 30 days.
    expect(await form.getByRole('radio', { name: `This repo only: ${alice.name}/sales` }).isChecked()).toBe(true);
    await form.getByRole('radio', { name: 'Read only' }).check();
    await form.getByRole('combobox', { name: 'Expires' }).selectOption({ label: 'In 30 days' });
    await expectAccessible(page, 'Connect dialog, new key form');
    await form.getByRole('button', { name: 'Create key' }).click();
    const shown = dialog.getByRole('textbox', { name: 'API key', exact: true });
    await expect.poll(() => shown.inputValue()).toMatch(/^rb_/);
    const key = await shown.inputValue();
    const table = dialog.getByRole('table', { name: 'Your API keys' });
    const row = table.getByRole('row').filter({ hasText: 'dashboard' });
    await expect.poll(() => row.textContent()).toContain('Read only');
    expect(await row.textContent()).toContain(`${alice.name}/sales`);
    expect(await row.getByRole('cell').nth(4).textContent()).not.toContain('Never');
    const old = table.getByRole('row').filter({ hasText: 'old report' });
    expect(await old.textContent()).toContain('Expired');
    await expectAccessible(page, 'Connect dialog, key list');
    await screenshot(page, shots, '08b-connect-scoped-key');
    await old.scrollIntoViewIfNeeded();
    await screenshot(page, shots, '08c-key-list');
    // The key reads the repo, and nothing else.
    const ask = (sql: string) =>
      fetch(`${svc.httpUrl}/api/v1beta/query/`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ query_string: sql }) });
    expect((await ask('SELECT 1')).status).toBe(200);
    const write = await ask(`CREATE TABLE "${alice.name}/sales".nope (id int)`);
    expect(write.status).toBe(403);
    expect(((await write.json()) as { error: { message: string } }).error.message).toContain('API key "dashboard"');
    await page.keyboard.press('Escape');
  });

  it("another user's private repo answers the same page as a missing one", async () => {
    await bob.page.request.post('/api/v1beta/repos/', { data: { name: 'secret', is_private: true }, headers: { 'x-csrf-token': await csrf(bob.page) } });
    const { page } = alice;
    await page.goto(`/${bob.name}/secret`);
    await expect.poll(() => page.getByRole('heading', { name: 'Not found' }).isVisible()).toBe(true);
    const secret = await page.locator('main').textContent();
    await screenshot(page, shots, '09-not-found');
    await expectAccessible(page, 'not found page');
    await page.goto(`/${bob.name}/no-such-repo`);
    await expect.poll(() => page.getByRole('heading', { name: 'Not found' }).isVisible()).toBe(true);
    expect((await page.locator('main').textContent())?.replaceAll('no-such-repo', 'secret')).toBe(secret);
    expect(secret).not.toContain(bob.name);
  });

  it('a cross-origin form post carrying the session cookie changes nothing', async () => {
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<form id="f" method="POST" action="${svc.httpUrl}/api/v1beta/repos/" enctype="text/plain"><input name='{"name":"evil","is_private":false,"x":"' value='"}'></form><script>document.getElementById('f').submit()</script>`,
      );
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    const port = (evil.address() as { port: number }).port;
    try {
      const page = await newPage(alice.context);
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.waitForURL((u) => u.pathname.startsWith('/api/v1beta/repos'));
      expect(await svc.control.getRepo({ owner: alice.name, repo: 'evil' })).toBeUndefined();
      await page.close();
    } finally {
      evil.close();
    }
  });

  it('a session id planted before log-in does not survive it', async () => {
    const page = await newPage();
    await page.context().addCookies([{ name: 'rb_session', value: 'planted-by-someone-else', url: svc.httpUrl }]);
    await logIn(page, alice.name);
    const cookie = (await page.context().cookies()).find((c) => c.name === 'rb_session');
    expect(cookie?.value).toBeTruthy();
    expect(cookie?.value).not.toBe('planted-by-someone-else');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Lax');
    await page.context().close();
  });

  it('log-out in one tab ends the session in the others', async () => {
    const other = await newPage(alice.context);
    await other.goto('/');
    await expect.poll(() => other.getByRole('button', { name: 'Log out' }).isVisible()).toBe(true);
    await alice.page.getByRole('button', { name: 'Log out' }).click();
    await alice.page.waitForURL((u) => u.pathname === '/login');
    await other.goto(`/${alice.name}/sales`);
    await other.waitForURL((u) => u.pathname === '/login');
    await other.close();
    await logIn(alice.page, alice.name);
  });

  it('deletes a repo once its name is typed', async () => {
    const { page } = alice;
    await page.goto(`/${alice.name}/sales`);
    await page.getByRole('button', { name: 'Delete repo' }).click();
    const dialog = page.getByRole('dialog');
    const confirm = dialog.getByRole('button', { name: 'Delete repo' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByRole('textbox').fill(`${alice.name}/sales`);
    await screenshot(page, shots, '10-delete');
    await expectAccessible(page, 'delete dialog');
    await confirm.click();
    await page.waitForURL((u) => u.pathname === '/');
    await expect.poll(() => page.getByRole('link', { name: `${alice.name}/sales` }).count()).toBe(0);
    expect(await svc.control.getRepo({ owner: alice.name, repo: 'sales' })).toBeUndefined();
  });

  it('the account page shows what the user uses against their limits', async () => {
    const dora = await signUp('dora');
    await svc.control.createRepo({ owner: dora.name, repo: 'big' });
    const key = (await svc.control.keys.create(dora.name)).key;
    const c = new pg.Client(svc.pgOptions(dora.name, key));
    await c.connect();
    try {
      await c.query(`CREATE TABLE "${dora.name}/big".t AS SELECT g AS id, repeat('x', 200) AS pad FROM generate_series(1, 4000) g`);
      await svc.control.setLimits(dora.name, { storageBytes: 2 * 1024 * 1024, connections: 50, active: 4, timeBudgetMs: 20_000 });
      const { page } = dora;
      await page.getByRole('link', { name: 'Account' }).click();
      await page.waitForURL((u) => u.pathname === '/account');
      await expect.poll(() => page.getByRole('heading', { name: 'Your account' }).count()).toBe(1);
      const meter = page.getByRole('meter', { name: 'Storage' });
      await expect.poll(() => meter.count()).toBe(1);
      expect(Number(await meter.getAttribute('value'))).toBeGreaterThan(500_000);
      const text = await page.locator('main').innerText();
      expect(text).toMatch(/[\d.,]+ (KiB|MiB) of 2 MiB \(\d+ %\)/);
      expect(text).toContain('1 of 50'); // the psql-like client above
      expect(text).toContain('at most 4 running at once');
      expect(text).toContain('20 s upstream a minute');
      expect(text).toContain('1 min'); // the statement timeout
      await screenshot(page, shots, '11-account');
      await expectAccessible(page, 'account page');
    } finally {
      await c.end();
    }
  });

  it('sign-up → create repo → Connect → Create key with the keyboard alone', async () => {
    const page = await newPage();
    await page.goto('/signup');
    await tabTo(page, 'Username');
    await page.keyboard.type(`carol_${suffix}`);
    await tabTo(page, 'Password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname === '/');
    await tabTo(page, 'New repo');
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname === '/new');
    await tabTo(page, 'Name');
    await page.keyboard.type('kb');
    await tabTo(page, 'Create repo');
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname === `/carol_${suffix}/kb`);
    await tabTo(page, 'Connect');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('dialog').isVisible()).toBe(true);
    await tabTo(page, 'Create key');
    await page.keyboard.press('Enter');
    const shown = page.getByRole('dialog').getByRole('textbox', { name: 'API key', exact: true });
    await expect.poll(() => shown.inputValue()).toMatch(/^rb_/);
    await page.context().close();
  });
});

/** The CSRF token of a page's session, as the console reads it. */
async function csrf(page: Page): Promise<string> {
  const res = await page.request.get('/api/v1beta/auth/session');
  return ((await res.json()) as { csrf_token: string }).csrf_token;
}
