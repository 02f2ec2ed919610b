/**
 * The limit of upstream sessions per user in a session pool (`maxPerRole`): a user's own role and
 * the roles of its scoped keys (`<user>#<key id>`, see control/key-roles.ts) share it, so that a
 * user with many keys holds no more backends than one without, and the one budget of backends
 * (budget.ts) is shared as before. Counts per user, and which users have roles waiting.
 */
import { tenantOf } from './roles.js';

export class TenantLimits {
  /** Sessions per user, open or opening. */
  private readonly sessions = new Map<string, number>();
  /** Roles with a line, per user. */
  private readonly lines = new Map<string, number>();
  /** The user of each role seen, so that a transaction's path slices no string. */
  private readonly users = new Map<string, string>();

  constructor(private readonly max: number) {}

  /** The user of `role`. */
  userOf(role: string): string {
    let user = this.users.get(role);
    if (user === undefined) {
      if (this.users.size > 10_000) this.users.clear();
      this.users.set(role, (user = tenantOf(role)));
    }
    return user;
  }

  /** Whether the role's user holds as many sessions as it may. */
  atLimit(role: string): boolean {
    return (this.sessions.get(this.userOf(role)) ?? 0) >= this.max;
  }

  opened(role: string): void {
    bump(this.sessions, this.userOf(role), 1);
  }

  closed(role: string): void {
    bump(this.sessions, this.userOf(role), -1);
  }

  lineStarted(role: string): void {
    bump(this.lines, this.userOf(role), 1);
  }

  lineEnded(role: string): void {
    bump(this.lines, this.userOf(role), -1);
  }

  /** Whether a role of the same user other than `role` has a line (`ownLine`: `role` has one itself). */
  otherWaits(role: string, ownLine: boolean): boolean {
    return (this.lines.get(this.userOf(role)) ?? 0) > (ownLine ? 1 : 0);
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
