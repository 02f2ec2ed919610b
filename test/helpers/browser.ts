/**
 * A real browser for the console's tests: Debian's Chromium driven by playwright-core (never a
 * downloaded browser), screenshots of every page under test-results/, and axe-core run in the page.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

export { CHROMIUM, launchBrowser } from '../../bench/lib/browser.js';

/** Where a test file's screenshots go: test-results/screenshots/<suite>/. */
export function screenshotDir(suite: string): string {
  return join(process.cwd(), 'test-results', 'screenshots', suite);
}

/** Saves a full-page screenshot as `<dir>/<name>.png`; returns its path. */
export async function screenshot(page: Page, dir: string, name: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  // A modal dialog covers the viewport only: a full-page shot would show the page half dimmed.
  await page.screenshot({ path, fullPage: (await page.getByRole('dialog').count()) === 0 });
  return path;
}

let axeSource: string | undefined;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: unknown[];
}

/**
 * Runs axe-core in the page (evaluated through the browser's debugging protocol, so the page's
 * CSP, which allows no inline script, is untouched) and asserts no serious or critical violation.
 */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  // A string, not a function: the test's transpiled code is not what runs in the page.
  const violations = (await page.evaluate(
    'axe.run().then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target) })))',
  )) as AxeViolation[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad, `${what}: ${JSON.stringify(bad, null, 1)}`).toEqual([]);
}
