/**
 * The service's share of the CPU beside an embedded Postgres on the same host (Linux).
 *
 * Every Postgres backend calls setsid() when it starts, so with the kernel's autogroups
 * (`/proc/sys/kernel/sched_autogroup_enabled`, on in most desktop and many server kernels, for
 * processes outside a cgroup of their own) each backend is a scheduling group of its own,
 * weighted like the whole service: a hundred busy backends left the service's event loop on a
 * CPU 4–5 % of the time, and every client's answer waited for it. So the backends the service
 * opens are given a lower weight: the postmaster's nice value (which backends forked afterwards
 * inherit, what counts where autogroups are off) and each new backend's autogroup nice value
 * (`/proc/<pid>/autogroup`, what counts where they are on). Postgres still gets every cycle
 * nobody else wants: nice only decides who runs first when both want the CPU.
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

/**
 * Lowers the postmaster's priority to `nice` and returns what lowers each backend's; undefined
 * when `nice` is 0. Failures (no permission, not Linux) are logged once and otherwise ignored.
 */
export async function lowerPostgresWeight(postmasterPid: number, nice: number, log: Logger): Promise<CpuWeight | undefined> {
  if (nice === 0) return undefined;
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
  const autogroups = (await readFile('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').catch(() => '0')).trim() === '1';
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
