/**
 * The idle check: before each scenario, every proxy of the run (repobase's targets of both builds,
 * PgBouncer) is watched with no load, for a second and again while it stays busy. A process busy
 * then takes the cores from whatever is measured next, on every target alike, and the ratios no
 * longer say what they seem to: the report names it. (A build once left its sessions in a loop of resets after a scenario
 * had refused its clients; every figure measured after it was a third of the day's.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuMicrosOf } from './proc.js';

/** A process busier than this share of a core with no load is named. */
export const IDLE_BUSY_CORES = 0.05;

export interface BusyWhileIdle {
  /** The scenario about to run. */
  before: string;
  target: string;
  /** Share of one core it used with no load. */
  cores: number;
}

/**
 * The targets (name → the pid of its process tree) busier than `IDLE_BUSY_CORES` in each of
 * `looks` windows of `ms` with no load. One look is not enough: a scenario's end leaves work that
 * ends by itself (the 10,000 wire connections of `connections` closing take a sixth of a core for
 * the first second after, then nothing), and only a process that stays busy takes the cores from
 * what is measured next. A process found idle once is not looked at again.
 */
export async function busyWhileIdle(before: string, targets: ReadonlyMap<string, number>, ms = 1000, looks = 3): Promise<BusyWhileIdle[]> {
  let busy: BusyWhileIdle[] = [];
  let watched = targets;
  for (let look = 0; look < looks && watched.size > 0; look++) {
    const start = new Map([...watched].map(([name, pid]) => [name, cpuMicrosOf(pid)]));
    const t0 = performance.now();
    await sleep(ms);
    const elapsedUs = (performance.now() - t0) * 1000;
    busy = [];
    for (const [target, pid] of watched) {
      const cores = (cpuMicrosOf(pid) - start.get(target)!) / elapsedUs;
      if (cores > IDLE_BUSY_CORES) busy.push({ before, target, cores });
    }
    watched = new Map(busy.map((b) => [b.target, targets.get(b.target)!]));
  }
  return busy;
}

/** The report's lines for what the idle checks found (none when nothing was busy). */
export function busyLines(found: readonly BusyWhileIdle[]): string[] {
  if (found.length === 0) return [];
  return [
    `**Busy with no load** (idle checks before each scenario; figures measured after these are suspect): ${found
      .map((b) => `${b.target} used ${Math.round(b.cores * 100)} % of a core before ${b.before}`)
      .join('; ')}.`,
    '',
  ];
}
