import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';

export const BIN = join(packageRoot, 'bin', 'repobase.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `repobase` command as a user would (needs `npm run build`, which `npm test` runs first). */
export function runCli(args: string[], env: Record<string, string | undefined> = {}, input?: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}
