/**
 * `npm run bench -- --against <git-ref>`: another build of repobase to measure beside this one in
 * the same run. The ref is checked out in a temporary git worktree outside the repository, its
 * dependencies installed with `npm ci` from its own lock file (a real node_modules of its own,
 * never a link to this one's) and built with its own `npm run build`. The worktree is removed
 * at the end, unless `--keep-build` asks to keep it for the next run, which then reuses it.
 */
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../src/shared/package-root.js';
import { run } from './proc.js';

export interface RefBuild {
  /** The ref as given (`d724f64`, `main`). */
  ref: string;
  /** Its commit. */
  sha: string;
  /** The ref's `bin/repobase.js`. */
  bin: string;
  /** `@<ref>`: appended to the names of the ref's targets in the report. */
  suffix: string;
  /**
   * Whether the ref pools wire clients by transaction (`pgPoolMode`): a build before it holds a
   * backend per client, refuses clients past its users' limit, and is not run by `clients`.
   */
  poolsByTransaction: boolean;
  /** Removes the worktree (kept when `keep`). */
  remove(): Promise<void>;
}

/** Written into a finished build: a worktree without it was interrupted and is made again. */
const BUILT_MARK = '.repobase-bench-built';

async function git(args: string[]): Promise<string> {
  const r = await run('git', ['-C', packageRoot, ...args]);
  if (r.code !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

async function step(what: string, cmd: string, args: string[], cwd: string): Promise<void> {
  const r = await run('sh', ['-c', `cd "$0" && exec "$@"`, cwd, cmd, ...args], { timeoutMs: 30 * 60_000 });
  if (r.code !== 0) throw new Error(`${what} failed in ${cwd} (exit ${r.code}):\n${(r.stderr || r.stdout).slice(-3000)}`);
}

/** Checks `ref` out and builds it (or reuses a kept build of the same commit). */
export async function buildRef(ref: string, opts: { keep: boolean }, log: (s: string) => void): Promise<RefBuild> {
  const sha = await git(['rev-parse', '--verify', `${ref}^{commit}`]);
  const dir = join(tmpdir(), `repobase-against-${sha.slice(0, 12)}`);
  const remove = async () => {
    if (opts.keep) return log(`kept the build of ${ref} in ${dir} (--keep-build)`);
    await git(['worktree', 'remove', '--force', dir]).catch(() => rm(dir, { recursive: true, force: true }));
    await git(['worktree', 'prune']).catch(() => undefined);
  };
  const built = existsSync(join(dir, BUILT_MARK)) && (await readFile(join(dir, BUILT_MARK), 'utf8')).trim() === sha;
  if (built) {
    log(`reusing the build of ${ref} (${sha.slice(0, 12)}) in ${dir}`);
  } else {
    await git(['worktree', 'remove', '--force', dir]).catch(() => rm(dir, { recursive: true, force: true }));
    await git(['worktree', 'prune']);
    log(`checking out ${ref} (${sha.slice(0, 12)}) in ${dir}`);
    await git(['worktree', 'add', '--detach', dir, sha]);
    try {
      log(`npm ci for ${ref}`);
      await step('npm ci', 'npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], dir);
      log(`npm run build for ${ref}`);
      await step('npm run build', 'npm', ['run', 'build'], dir);
      await writeFile(join(dir, BUILT_MARK), sha + '\n');
    } catch (err: unknown) {
      await git(['worktree', 'remove', '--force', dir]).catch(() => undefined);
      throw err;
    }
  }
  const poolsByTransaction = (await run('git', ['-C', packageRoot, 'grep', '-q', 'pgPoolMode', sha, '--', 'src'])).code === 0;
  return { ref, sha, bin: join(dir, 'bin', 'repobase.js'), suffix: ` @${ref}`, poolsByTransaction, remove };
}
