/**
 * CPU weight by share, where the service may set its backends' weights (the embedded Postgres:
 * cpu-weight.ts). The fair queue shares slots, not cores: a user running many CPU-heavy
 * statements at once keeps every core busy, and another user's one-row lookup, let in at once by
 * its reserved share, still waits behind them for a core — 3 ms a statement and 30 ms at p99 in
 * the `tenants` benchmark, against 0.4 and 4 alone. So while more than one user is active, a user
 * running more transactions at once than there are cores (a quarter of the slots) is *heavy*:
 * each of its backends seen holding a slot is lowered (`heavyUserNice` steps) until the user has
 * not been heavy for a second. Nice orders only who runs first when both want a core: a heavy
 * user still gets every cycle nobody else asks for.
 *
 * Looked at by the fair queue's ticker (admission.ts), never per transaction.
 */
import type { CpuWeight } from './cpu-weight.js';
import type { Hold, Tenant } from './tenant.js';

/** Above how many transactions running at once a user may be heavy: a quarter of the slots (the cores, at the default of 4 a core). */
export function heavyAbove(max: number): number {
  return max / 4;
}

/** Looks (ticks of 100 ms) a lowered user must not be heavy before their backends get their weight back. */
const RESTORE_LOOKS = 10;

interface Lowered {
  holds: Hold[];
  /** Looks in a row that did not find the user heavy. */
  light: number;
}

export class HeavyUsers {
  private readonly lowered = new Map<Tenant, Lowered>();

  constructor(private readonly weights: Pick<CpuWeight, 'lower' | 'restore'>) {}

  /** Whether some user's backends are lowered now (the ticker goes on while so). */
  get any(): boolean {
    return this.lowered.size > 0;
  }

  /**
   * One look at the slots held (`holds`) while `active` users took part since the last: lowers the
   * backends of heavy users not lowered yet, and gives theirs back to users light long enough.
   */
  look(holds: readonly Hold[], active: number, above: number): void {
    const heavy = new Set<Tenant>();
    if (active >= 2) {
      for (const hold of holds) {
        const t = hold.tenant;
        if (t === undefined || t.running <= above) continue;
        heavy.add(t);
        let lowered = this.lowered.get(t);
        if (lowered === undefined) this.lowered.set(t, (lowered = { holds: [], light: 0 }));
        if (hold.lowered) continue;
        hold.lowered = true;
        lowered.holds.push(hold);
        this.weights.lower(hold.pid);
      }
    }
    for (const [t, lowered] of this.lowered) {
      if (heavy.has(t)) lowered.light = 0;
      else if (++lowered.light >= RESTORE_LOOKS) this.restore(t, lowered);
    }
  }

  private restore(t: Tenant, lowered: Lowered): void {
    this.lowered.delete(t);
    for (const hold of lowered.holds) {
      hold.lowered = false;
      this.weights.restore(hold.pid);
    }
  }
}
