/**
 * Debian's Chromium driven by playwright-core (never a downloaded browser), for the console's
 * tests and the `web` bench scenario alike.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** The browser driven; Debian's `chromium` package by default. */
export const CHROMIUM = process.env.REPOBASE_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Flags that keep Chromium from reaching for a network this machine does not have. */
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no browser at ${CHROMIUM}: run 'bash scripts/install-test-tools.sh' as root (it installs Debian's chromium), or set REPOBASE_TEST_CHROMIUM`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}
