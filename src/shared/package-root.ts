import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding repobase's package.json, found the same way from the sources
 * (tests) and from the compiled `dist/` tree.
 */
export const packageRoot: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'config', 'default.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('repobase package root not found');
    dir = parent;
  }
  return dir;
})();
