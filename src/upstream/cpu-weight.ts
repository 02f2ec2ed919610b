/**
 * The service's share of the CPU beside an embedded Postgres on the same host (Linux).
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
 * An external cluster is left as it is: its operator renices its Postgres, or gives the service
 * a CPU of its own (docs/operations.md).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import type { Logger } from '../shared/logger.js';

export interface CpuWeight {
  /** Lowers the weight of a backend just opened (its autogroup's). */
  backendOpened(pid: number): void;
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

/**
 * Gives the service `nice` steps more weight than the embedded Postgres' backends: its own raised
 * when it may (nothing to do per backend then), else the postmaster lowered, and what lowers each
 * backend's returned. Undefined when `nice` is 0. Failures (no permission, not Linux) are logged
 * once and otherwise ignored.
 */
export async function lowerPostgresWeight(postmasterPid: number, nice: number, log: Logger): Promise<CpuWeight | undefined> {
  if (nice === 0) return undefined;
  const autogroups = (await readFile(AUTOGROUPS, 'utf8').catch(() => '0')).trim() === '1';
  if (await raiseSelf(nice, autogroups)) return { backendOpened: () => undefined };
  let warned = false;
  const warn = (err: unknown, what: string) => {
    if (warned) return;
    warned = true;
    log.warn({ err: String((err as Error)?.message ?? err), nice }, `could not lower the embedded Postgres' CPU weight (${what}); the service may get less CPU under load`);
  };
  try {
    setPriority(postmasterPid, nice);
  } catch (err: unknown) {
    warn(err, 'renice of the postmaster');
  }
  if (!autogroups) return { backendOpened: () => undefined };
  return {
    backendOpened: (pid) => {
      writeFile(`/proc/${pid}/autogroup`, String(nice)).catch((err: unknown) => {
        // A backend gone already (ENOENT, ESRCH) is no failure.
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ESRCH') warn(err, `autogroup of backend ${pid}`);
      });
    },
  };
}
