/**
 * The CPU weights of the service and of an embedded Postgres' backends on the same host (Linux).
 *
 * Every Postgres backend calls setsid() when it starts, so with the kernel's autogroups
 * (`/proc/sys/kernel/sched_autogroup_enabled`, on in most desktop and many server kernels, for
 * processes outside a cgroup of their own) each backend is a scheduling group of its own,
 * weighted like the whole service: a hundred busy backends left the service's event loop on a
 * CPU 4–5 % of the time, and every client's answer waited for it. So the service takes a higher
 * weight than the backends, by `nice` steps: where it may (root, or CAP_SYS_NICE) it raises its
 * own — its main thread's nice value and its autogroup's (`/proc/self/autogroup`) — which leaves
 * Postgres as it is towards everything else on the host; where it may not, it lowers the
 * backends': the postmaster's nice value (which backends forked afterwards inherit, what counts
 * where autogroups are off) and each new backend's autogroup (`/proc/<pid>/autogroup`, what
 * counts where they are on). Postgres still gets every cycle the service does not want: nice only
 * decides who runs first when both want the CPU.
 *
 * A heavy user's backends (heavy-users.ts) are lowered `heavyNice` steps more while others are
 * active, and given their weight back after: only where that can be undone (autogroups on, whose
 * nice a process's owner may lower back to where it was, or the service allowed to raise).
 *
 * An external cluster is left as it is: its operator renices its Postgres, or gives the service
 * a CPU of its own (docs/operations.md).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import type { Logger } from '../shared/logger.js';

export interface CpuWeight {
  /** Lowers the weight of a backend just opened (its autogroup's). */
  backendOpened(pid: number): void;
  /** Lowers a heavy user's backend; `restore` gives it back the weight of the others. */
  lower(pid: number): void;
  restore(pid: number): void;
}

const AUTOGROUPS = '/proc/sys/kernel/sched_autogroup_enabled';

/** Raises this process's weight by `nice` steps (its main thread's nice value, and its autogroup's where autogroups are on); false when it may not. */
async function raiseSelf(nice: number, autogroups: boolean): Promise<boolean> {
  try {
    setPriority(-nice);
    if (autogroups) await writeFile('/proc/self/autogroup', String(-nice));
    return true;
  } catch {
    return false;
  }
}

/** A backend gone already (ENOENT, ESRCH) is no failure. */
function gone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ESRCH';
}

/**
 * Gives the service `nice` steps more weight than the embedded Postgres' backends: its own raised
 * when it may (nothing to do per backend then), else the postmaster lowered and each new backend
 * with it; and lowers a heavy user's backends `heavyNice` steps more on demand. Undefined when
 * both are 0. Failures (no permission, not Linux) are logged once and otherwise ignored.
 */
export async function postgresWeights(postmasterPid: number, nice: number, heavyNice: number, log: Logger): Promise<CpuWeight | undefined> {
  if (nice === 0 && heavyNice === 0) return undefined;
  const autogroups = (await readFile(AUTOGROUPS, 'utf8').catch(() => '0')).trim() === '1';
  let warned = false;
  const warn = (err: unknown, what: string) => {
    if (warned || gone(err)) return;
    warned = true;
    log.warn({ err: String((err as Error)?.message ?? err), nice, heavyNice }, `could not lower the embedded Postgres' CPU weight (${what}); the service may get less CPU under load`);
  };
  const raised = nice > 0 && (await raiseSelf(nice, autogroups));
  const base = nice > 0 && !raised ? nice : 0;
  if (base > 0) {
    try {
      setPriority(postmasterPid, base);
    } catch (err: unknown) {
      warn(err, 'renice of the postmaster');
    }
  }
  const set = (pid: number, value: number) => {
    if (autogroups) writeFile(`/proc/${pid}/autogroup`, String(value)).catch((err: unknown) => warn(err, `autogroup of backend ${pid}`));
    else {
      try {
        setPriority(pid, value);
      } catch (err: unknown) {
        warn(err, `renice of backend ${pid}`);
      }
    }
  };
  // Lowered only where it can be undone: an autogroup's nice, or a process's where the service may raise one.
  const mayUndo = autogroups || raised || process.getuid?.() === 0;
  const lowered = heavyNice > 0 && mayUndo ? Math.min(19, base + heavyNice) : base;
  return {
    backendOpened: (pid) => {
      if (base > 0 && autogroups) set(pid, base);
    },
    lower: (pid) => {
      if (lowered !== base) set(pid, lowered);
    },
    restore: (pid) => {
      if (lowered !== base) set(pid, base);
    },
  };
}
