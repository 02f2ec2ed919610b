/**
 * What a session pool counts: sessions per role (open or being opened) and those being opened,
 * and the limit of sessions per user (`maxPerRole`), which a user's own role and the roles of its
 * scoped keys (`<user>#<key id>`, see control/key-roles.ts) share, so that a user with many keys
 * holds no more backends than one without; and which users have roles waiting in a line.
 */
import { tenantOf } from './roles.js';

export class SessionCounts {
  /** Sessions per role, open or opening. */
  private readonly roles = new Map<string, number>();
  /** Sessions being opened, per role. */
  private readonly openings = new Map<string, number>();
  /** Sessions per user, open or opening. */
  private readonly users = new Map<string, number>();
  /** Roles with a line, per user. */
  private readonly lines = new Map<string, number>();
  /** The user of each role seen, so that a transaction's path slices no string. */
  private readonly userOfRole = new Map<string, string>();

  constructor(private readonly max: number) {}

  /** The user of `role`. */
  userOf(role: string): string {
    let user = this.userOfRole.get(role);
    if (user === undefined) {
      if (this.userOfRole.size > 10_000) this.userOfRole.clear();
      this.userOfRole.set(role, (user = tenantOf(role)));
    }
    return user;
  }

  /** The role's sessions, open or being opened. */
  of(role: string): number {
    return this.roles.get(role) ?? 0;
  }

  /** Sessions of every role. */
  get total(): number {
    let n = 0;
    for (const c of this.roles.values()) n += c;
    return n;
  }

  /** Sessions of the role being opened. */
  opening(role: string): number {
    return this.openings.get(role) ?? 0;
  }

  /** Whether the role's user holds as many sessions as it may. */
  atLimit(role: string): boolean {
    return (this.users.get(this.userOf(role)) ?? 0) >= this.max;
  }

  /** A session of the role is being opened: it counts from now on. */
  openingStarted(role: string): void {
    bump(this.roles, role, 1);
    bump(this.users, this.userOf(role), 1);
    bump(this.openings, role, 1);
  }

  /** The opening is over (the session is open, or it failed and `closed` follows). */
  openingEnded(role: string): void {
    bump(this.openings, role, -1);
  }

  /** A session of the role is gone. */
  closed(role: string): void {
    bump(this.roles, role, -1);
    bump(this.users, this.userOf(role), -1);
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
