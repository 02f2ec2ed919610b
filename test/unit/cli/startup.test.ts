// The client commands of the built CLI start without loading what only `serve` and the admin
// commands use — the configuration's schema, the Postgres driver, the control plane, the server —
// which took a client command from 0.2 to 0.9 s. (The flags of the configuration's keys are still
// accepted everywhere: their names come from config/default.json.) Module loads are recorded by a
// loader hook in the CLI's own process; an import of any of them at the top of a module the client
// commands reach fails this test.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../../helpers/cli.js';

let dir: string;
let register: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-startup-'));
  const hooks = join(dir, 'hooks.mjs');
  await writeFile(hooks, `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.LOADED_LOG, url + '\\n');
  return next(url, context);
}
`);
  register = join(dir, 'register.mjs');
  await writeFile(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The modules the CLI loads for `args` (it fails to reach a server at port 1, which is fine here). */
function loadedBy(args: string[], name: string): Promise<string[]> {
  const log = join(dir, `${name}.log`);
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, LOADED_LOG: log, REPOBASE_URL: 'http://127.0.0.1:1', REPOBASE_API_KEY: 'k' };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', register, BIN, ...args], { env, timeout: 30_000 }, () => {
      readFile(log, 'utf8').then((text) => resolve(text.split('\n').filter(Boolean)), reject);
    });
  });
}

/** What only `serve` and the admin commands need. */
const HEAVY = [
  /\/node_modules\/(typebox|pg|pg-protocol|fastify|libpg-query|pino)\//,
  /\/dist\/src\/(http|wire|policy|ingest)\//,
  /\/dist\/src\/(main|shared\/config|control\/(control-plane|db|accounts)|workers\/(primary|worker)|upstream\/(cluster|citus|session|embedded))\.js$/,
];

describe('the CLI at start-up', () => {
  it('loads neither the configuration nor the server for a client command', async () => {
    // `keys` and `repo create` with a key are client commands of the admin groups: through the API.
    for (const args of [['query', 'SELECT 1'], ['repos'], ['--help'], ['keys'], ['repo', 'create', 'al/sales']]) {
      const loaded = await loadedBy(args, args.join('-').replace(/\W/g, ''));
      expect(loaded.some((u) => u.endsWith('/dist/src/cli/main.js'))).toBe(true); // the hook saw the CLI load
      expect(loaded.filter((u) => HEAVY.some((h) => h.test(u)))).toEqual([]);
    }
  });

  it('loads the configuration for a command that reads it', async () => {
    const loaded = await loadedBy(['user', 'list', '--upstream-url', 'postgresql://u:p@127.0.0.1:1/x'], 'user');
    expect(loaded.some((u) => u.endsWith('/dist/src/shared/config.js'))).toBe(true);
    expect(loaded.some((u) => u.endsWith('/dist/src/control/control-plane.js'))).toBe(true);
  });
});
