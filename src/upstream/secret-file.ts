import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';

/**
 * Reads a generated secret from `path`, creating it (32 random bytes, base64url, mode 0600) on
 * first use. `wx` makes two processes starting at once agree on one value.
 */
export async function readOrCreateSecretFile(path: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (err: unknown) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const value = randomBytes(32).toString('base64url');
  try {
    await writeFile(path, value + '\n', { mode: 0o600, flag: 'wx' });
    return value;
  } catch (err: unknown) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return (await readFile(path, 'utf8')).trim();
    throw err;
  }
}
