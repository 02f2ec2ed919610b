/**
 * People: the console's accounts — a user made with a password (sign-up), passwords, and the
 * sessions behind the console's cookie. API keys are key-store.ts's.
 */
import type pg from 'pg';
import { inTransaction } from './db.js';
import {
  assertPassword,
  checkPassword,
  createSession,
  deleteSession,
  hashPassword,
  invalidCredentials,
  loadSession,
  needsRenewal,
  setPassword,
  touchSession,
  type NewWebSession,
  type WebSession,
} from './accounts.js';
import { insertUser } from './users.js';

export class People {
  /** @param db the admin pool, once the control plane is ready (08006 before) */
  constructor(
    private readonly db: () => pg.Pool,
    private readonly secret: string,
  ) {}

  /** Creates user `name` as createUser does (role, first key) with a password, and logs them in. */
  async signUp(name: string, password: string): Promise<NewWebSession> {
    assertPassword(password);
    // Hashed before the transaction: the slow part must not hold a connection in a transaction.
    const passwordHash = await hashPassword(password);
    return inTransaction(this.db(), async (db) => {
      await insertUser(db, name, this.secret);
      await setPassword(db, name, passwordHash);
      return createSession(db, name);
    });
  }

  /** Sets `name`'s console password (42704 for an unknown user); their open sessions end. */
  async setPassword(name: string, password: string): Promise<void> {
    assertPassword(password);
    const passwordHash = await hashPassword(password);
    await inTransaction(this.db(), (db) => setPassword(db, name, passwordHash));
  }

  /** A new session for `name`, or 28P01, the same for an unknown user and a wrong password. */
  async logIn(name: string, password: string): Promise<NewWebSession> {
    if (!(await checkPassword(this.db(), name, password))) throw invalidCredentials();
    return inTransaction(this.db(), (db) => createSession(db, name));
  }

  /**
   * The live session behind cookie id `id`, renewed when due. Read from the control plane on
   * every call, never cached: a log-out must end the session on every instance at once.
   */
  async session(id: string): Promise<WebSession | undefined> {
    const found = await loadSession(this.db(), id);
    if (!found || !needsRenewal(found)) return found;
    const expiresAt = await touchSession(this.db(), id);
    return expiresAt && { ...found, expiresAt, renewed: true };
  }

  /** Ends session `id` (log-out); an unknown id is not an error. */
  async endSession(id: string): Promise<void> {
    return deleteSession(this.db(), id);
  }
}
