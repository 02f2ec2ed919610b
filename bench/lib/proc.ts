/** Child processes, ports and memory readings for the benchmark. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { createServer } from 'node:net';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 600_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Where Linux starts handing out local ports to outgoing connections (default ip_local_port_range). */
const EPHEMERAL_FIRST = 32768;
const LISTEN_FIRST = 20000;

/**
 * A TCP port free on 127.0.0.1 right now, for a server started a moment later (Postgres,
 * PgBouncer, a repobase child). Chosen below the ephemeral range: a port the kernel picked with
 * `listen(0)` could, once released, become the local port of an outgoing connection before the
 * server binds it, which made start-ups fail now and then with "address in use".
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LISTEN_FIRST + Math.floor(Math.random() * (EPHEMERAL_FIRST - LISTEN_FIRST));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free TCP port between ${LISTEN_FIRST} and ${EPHEMERAL_FIRST} on 127.0.0.1`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * Starts a long-running child; its output goes to `log` lines prefixed with `name` on failure.
 * `detached`: in a session of its own — a scheduling group of its own under the kernel's
 * autogroups, as a service or a client on a machine of its own would be — and sent SIGTERM if the
 * bench exits first.
 */
export function start(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, opts: { detached?: boolean } = {}): { child: ChildProcess; output: () => string; stop: () => Promise<void> } {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached === true });
  if (opts.detached) {
    const orphaned = () => child.kill('SIGTERM');
    process.once('exit', orphaned);
    child.once('exit', () => process.off('exit', orphaned));
  }
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    child,
    output: () => `[${name}] ${out}`,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      // unref: a child that exited in time must not keep the bench alive until the timer fires.
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000).unref())]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not come up within ${timeoutMs} ms`);
}

/**
 * The fields of /proc/<pid>/stat after the command name (so field 4 of stat, the parent pid, is
 * index 1), or undefined once the process is gone.
 */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Pids of the processes whose parent is `pid` (Linux /proc). */
export function childrenOf(pid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (/^\d+$/.test(entry) && Number(statFields(entry)?.[1]) === pid) pids.push(Number(entry));
  }
  return pids;
}

function vmRss(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** Resident set size of a process and its children (repobase's workers), in bytes (Linux). */
export function rssOf(pid: number): number {
  return childrenOf(pid).reduce((sum, child) => sum + vmRss(child), vmRss(pid));
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time in µs used so far by a process and its children (Linux /proc): its own user and system
 * time, its reaped children's (a Postgres backend that ended, counted in the postmaster), and that
 * of its live children (repobase's workers, Postgres's backends). 0 where /proc is not.
 */
export function cpuMicrosOf(pid: number): number {
  const ticks = (p: number, withReaped: boolean): number => {
    const f = statFields(p);
    if (!f) return 0; // gone meanwhile
    // Fields 14–17 of stat (utime, stime, cutime, cstime) are 11–14 here.
    return Number(f[11]) + Number(f[12]) + (withReaped ? Number(f[13]) + Number(f[14]) : 0);
  };
  const total = childrenOf(pid).reduce((sum, child) => sum + ticks(child, false), ticks(pid, true));
  return (total * 1e6) / TICKS_PER_SECOND;
}

/** A process and all its descendants (Linux /proc): repobase's workers, Postgres's backends, runuser's PgBouncer. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...childrenOf(tree[i]!));
  return tree;
}

/** Restricts a process and all its threads to `cpus` (`taskset`). */
export async function pinProcess(pid: number, cpus: readonly number[]): Promise<void> {
  const r = await run('taskset', ['-a', '-p', '-c', cpus.join(','), String(pid)]);
  if (r.code !== 0) throw new Error(`taskset could not pin process ${pid} to CPUs ${cpus.join(',')}: ${r.stderr.trim()}`);
}

/**
 * Restricts a process, its threads and its descendants to `cpus`; children forked later inherit
 * it (a postmaster's new backends). A descendant that exits meanwhile is skipped.
 */
export async function pinTree(pid: number, cpus: readonly number[]): Promise<void> {
  await pinProcess(pid, cpus);
  for (const p of processTree(pid).slice(1)) await pinProcess(p, cpus).catch(() => undefined);
}

/** The CPUs this process may run on (Linux: `Cpus_allowed_list` of /proc/self/status), else 0 … n−1. */
function allowedCpus(): number[] {
  try {
    const list = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';
    return list.split(',').flatMap((range) => {
      const [a, b = a] = range.split('-').map(Number);
      return Array.from({ length: b! - a! + 1 }, (_, i) => a! + i);
    });
  } catch {
    return [...Array(availableParallelism()).keys()];
  }
}

/**
 * The CPUs split for the "cores of their own" scenarios: the first half for the load (the load
 * generator and Postgres), the rest for the proxies; `all` to put everything back. A reason
 * string where it cannot be done.
 */
export async function cpuSplit(): Promise<{ all: number[]; loadCpus: number[]; proxyCpus: number[] } | string> {
  const all = allowedCpus();
  if (all.length < 2) return `needs at least 2 CPUs, this process may use ${all.length}`;
  if ((await run('sh', ['-c', 'command -v taskset'])).code !== 0) return 'taskset (util-linux) is not installed';
  const proxyCpus = all.slice(all.length - Math.floor(all.length / 2));
  return { all, loadCpus: all.slice(0, all.length - proxyCpus.length), proxyCpus };
}
