/**
 * The control plane: users, repos and collaborators, kept in a private schema on the admin pool,
 * and the stores beside them (API keys, people, audit, usage, limits). Both front ends and the
 * admin CLI go through this one object.
 */
import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import { PgError, SqlState } from '../shared/errors.js';
import { isUnreachable, type Cluster } from '../upstream/cluster.js';
import { secretFingerprint } from '../upstream/roles.js';
import { inTransaction } from './db.js';
import { CACHE_TTL_MS, listen, type ListenerEvent, type SchemaChange } from './events.js';
import { insertKey, type KeyInfo, type NewKey, type Principal, type ScramCredentials } from './keys.js';
import { KeyStore, type KeyWatcher } from './key-store.js';
import type { KeyRequest } from './key-scope.js';
import { syncRepoForKeys } from './key-roles.js';
import { keyDdlInstalled, migrate, schemaEventsInstalled } from './migrations.js';
import { CitusPlacing } from './placement.js';
import { parseRepoRef, schemaName, type RepoRef } from './names.js';
import {
  deleteRepo,
  getRepo,
  insertRepo,
  listCollaborators,
  listRepos,
  listSharedRepos,
  reachableRepos,
  removeCollaborator,
  setCollaborator,
  updateRepo,
  type Collaborator,
  type Permission,
  type RepoAccess,
  type RepoInfo,
} from './repos.js';
import { deleteUser, insertUser, listUsers, syncRolePasswords, type UserInfo } from './users.js';
import type { NewWebSession, WebSession } from './accounts.js';
import { People } from './people.js';
import { TtlCache } from './ttl-cache.js';
import { AuditLog, listAudit, type AuditEntry, type AuditFilter } from './audit.js';
import { storageOf, type Storage } from './storage.js';
import { UsageRecorder, listUsage, type UsageRow } from './usage.js';
import { NO_LIMITS, type LimitOverrides, type UserLimits } from '../shared/limits.js';
import { Tenancy } from './tenancy.js';

export type { SchemaChange };
export type { Principal, KeyInfo, KeyRequest, KeyWatcher, NewKey, ScramCredentials, RepoInfo, Collaborator, Permission, RepoAccess, UserInfo, RepoRef, WebSession, NewWebSession };
/** What one principal may reach: the policy engine's input. */
export type { Rights } from '../policy/types.js';
import type { Rights } from '../policy/types.js';

/** Back-off of the retries of `openWhenReachable`: doubling from the first delay up to the last. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 2_000;

export interface ControlPlaneOptions {
  /** Listen for changes made by other instances (serving processes do; one-shot CLI commands don't). */
  listen: boolean;
  /** Audit rows older than this many days are deleted at start and hourly (serving processes only; 0 = kept). */
  auditRetentionDays?: number;
  /** Every user's limits unless an admin set others (the configuration's; see shared/limits.ts); default: none. */
  defaultLimits?: UserLimits;
  /** Serving processes: how often what users store is read for the storage quota (see quota.ts). */
  storageRefreshMs?: number;
}

export class ControlPlane {
  private readonly rightsCache = new TtlCache<string, Rights>(CACHE_TTL_MS, 10_000);
  /** API keys: their checks, scopes, roles and watchers (key-store.ts). */
  readonly keys: KeyStore;
  /** People: console passwords and sessions (people.ts). */
  readonly people: People;
  /** Whether write keys may change structure: the event triggers of migration 12 are installed. */
  private keyDdl = false;
  private readonly schemaHandlers = new Set<(change: SchemaChange) => void>();
  private listener: { ready: Promise<void>; close(): Promise<void> } | undefined;
  /** On a Citus coordinator: where repos are stored and placed (placement.ts). */
  private readonly citus: CitusPlacing;
  /** Where front ends report audited actions (buffered; see audit.ts). */
  readonly audit: AuditLog;
  /** Where front ends count per-user usage (buffered; see usage.ts). */
  readonly usage: UsageRecorder;
  /** Every user's limits and, serving, who is over their storage quota (see tenancy.ts). */
  readonly tenancy: Tenancy;
  private ready = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  private constructor(private readonly cluster: Cluster, private readonly log: Logger, opts: ControlPlaneOptions) {
    this.keys = new KeyStore({
      admin: () => this.db,
      pool: cluster.admin,
      secret: cluster.secret,
      log,
      rights: (user) => this.rights(user),
      peekRights: (user) => this.rightsCache.get(user),
      ddl: () => this.keyDdl,
    });
    this.people = new People(() => this.db, cluster.secret);
    this.citus = new CitusPlacing(cluster.admin, log);
    this.audit = new AuditLog(cluster.admin, log);
    this.usage = new UsageRecorder(cluster.admin, log);
    this.tenancy = new Tenancy(cluster.admin, opts.defaultLimits ?? NO_LIMITS, log);
  }

  /** Migrates the control schema, re-keys role passwords if the secret changed, starts listening. */
  static async open(cluster: Cluster, log: Logger, opts: ControlPlaneOptions): Promise<ControlPlane> {
    const plane = new ControlPlane(cluster, log.child({ mod: 'control' }), opts);
    await plane.prepare(opts);
    plane.ready = true;
    return plane;
  }

  /**
   * As `open`, but an upstream that cannot be reached (an external one down while the service
   * starts) is no failure: the plane is returned at once, not `ready`, and its start-up work is
   * retried in the background with back-off (logged once per change of state, not per try) until
   * it succeeds. Meanwhile every call answers 08006 (see `assertReachable`), so both front ends
   * can listen and tell their clients why. Any other failure of the first try (a wrong password,
   * a role without CREATEROLE) is thrown, as from `open`.
   */
  static async openWhenReachable(cluster: Cluster, log: Logger, opts: ControlPlaneOptions): Promise<ControlPlane> {
    const plane = new ControlPlane(cluster, log.child({ mod: 'control' }), opts);
    try {
      await cluster.check();
      await plane.prepare(opts);
      plane.ready = true;
    } catch (err: unknown) {
      if (!isUnreachable(err)) throw err;
      plane.log.warn({ err: String((err as Error).message) }, 'upstream Postgres is not reachable: serving errors (08006) and retrying in the background');
      plane.retry(opts, err as PgError);
    }
    return plane;
  }

  /**
   * A clearer error for an upstream error of `sql`, where repobase knows more than Postgres said:
   * on Citus, a join of repos on different nodes names the repos (see upstream/citus-joins.ts).
   */
  async explainError(err: PgError, sql: string): Promise<PgError | undefined> {
    return this.citus.explain(err, sql);
  }

  /** As `explainError`, at once, from what is known now (the wire relay answers in order). */
  explainErrorNow(err: PgError, sql: string): PgError | undefined {
    return this.citus.explainNow(err, sql);
  }

  /** Start-up work on the upstream: the one thing `open` and each retry of `openWhenReachable` do. */
  private async prepare(opts: ControlPlaneOptions): Promise<void> {
    const applied = await migrate(this.cluster.admin);
    if (applied.length) this.log.info({ applied }, 'control plane migrated');
    const reset = await inTransaction(this.cluster.admin, (db) => syncRolePasswords(db, this.cluster.secret, secretFingerprint(this.cluster.secret)));
    if (reset) this.log.warn({ roles: reset }, 'server secret changed: user role passwords reset');
    this.keyDdl = await keyDdlInstalled(this.cluster.admin);
    await this.citus.start();
    if (opts.listen && !this.closed) {
      this.listener ??= listen(this.cluster.adminConfig, (e) => this.onEvent(e), this.log); // once, though a retry may come back here
      await this.listener.ready;
      if (!(await schemaEventsInstalled(this.cluster.admin))) {
        this.log.warn('live schema updates are off: the event triggers that report schema changes need a superuser admin role, and this one is not (consoles show changes made elsewhere when reloaded)');
      }
      if (!this.keyDdl) this.log.warn('write keys cannot change structure: the event triggers that hand objects to their users need a superuser admin role, and this one is not (write keys still read and change rows)');
      this.audit.startRetention(opts.auditRetentionDays ?? 0);
      this.keys.startExpirySweep();
    }
    // A user crossing their storage quota either way: decisions cached with the old snapshots must go.
    await this.tenancy.start(opts.listen && !this.closed, opts.storageRefreshMs ?? 30_000, () => this.rightsCache.clear());
  }

  /** Tries `prepare` again after a back-off delay, until it succeeds or the plane is closed. */
  private retry(opts: ControlPlaneOptions, last: PgError, delay = RETRY_FIRST_MS): void {
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void (async () => {
        try {
          await this.cluster.check();
          if (this.closed) return;
          await this.prepare(opts);
          if (this.closed) return;
          this.ready = true;
          this.log.info('upstream Postgres reachable: control plane ready, serving');
        } catch (err: unknown) {
          if (this.closed) return;
          const e = err instanceof PgError ? err : new PgError(SqlState.ConnectionFailure, String((err as Error)?.message ?? err));
          // Logged when the reason changes (refused → starting up → …), not on every try.
          if (e.code !== last.code || e.message !== last.message) this.log.warn({ err: e.message, code: e.code }, 'upstream Postgres still not usable: retrying');
          this.retry(opts, e, Math.min(delay * 2, RETRY_MAX_MS));
        }
      })();
    }, delay);
    this.retryTimer.unref();
  }

  /**
   * Throws 08006 while the upstream has not been reached since start-up (see
   * `openWhenReachable`): what a wire client or REST request gets instead of an error of a
   * control schema not migrated yet.
   */
  assertReachable(): void {
    if (!this.ready) {
      throw new PgError(SqlState.ConnectionFailure, 'the database is not reachable; retrying', {
        hint: 'upstream Postgres has not answered since the service started; it connects by itself once Postgres is up: try again shortly',
      });
    }
  }

  /** False until the upstream was reached once and the control schema is migrated. */
  get isReady(): boolean {
    return this.ready;
  }

  /** The admin pool, once the control plane is ready (08006 before). */
  private get db(): pg.Pool {
    this.assertReachable();
    return this.cluster.admin;
  }

  get admin(): pg.Pool {
    return this.cluster.admin;
  }

  private onEvent(e: ListenerEvent): void {
    switch (e.kind) {
      case 'schema':
        this.citus.changed(e.change);
        for (const handler of this.schemaHandlers) handler(e.change);
        break;
      case 'key':
        this.keys.changed(e.id);
        break;
      case 'rights':
        this.rightsCache.clear();
        break;
      case 'limits':
        void this.tenancy.reload();
        break;
      case 'user':
      case 'lost':
        this.rightsCache.clear();
        this.keys.changedAll(e.kind === 'user' ? e.name : undefined);
        if (e.kind === 'lost') void this.tenancy.reload();
        break;
    }
  }

  // ── users ─────────────────────────────────────────────────────────────────────────────

  /** Creates a user with its role and first API key. */
  async createUser(name: string): Promise<NewKey> {
    return inTransaction(this.db, async (db) => {
      await insertUser(db, name, this.cluster.secret);
      return insertKey(db, name);
    });
  }

  async listUsers(): Promise<UserInfo[]> {
    return listUsers(this.db);
  }

  async deleteUser(name: string): Promise<void> {
    await inTransaction(this.db, (db) => deleteUser(db, name));
    this.onEvent({ kind: 'user', name });
  }

  // ── repos ─────────────────────────────────────────────────────────────────────────────

  async createRepo(ref: RepoRef | string, opts: { isPrivate?: boolean; description?: string } = {}): Promise<RepoInfo> {
    const r = typeof ref === 'string' ? parseRepoRef(ref) : ref;
    const insert = async (db: pg.PoolClient) => {
      const info = await insertRepo(db, r, { isPrivate: opts.isPrivate ?? true, description: opts.description ?? '' });
      await syncRepoForKeys(db, r.owner, schemaName(r), 'own', this.keyDdl); // the owner's keys for every repo, or listing this name
      return info;
    };
    const info = await inTransaction(this.db, (db) => this.citus.create(db, r.owner, schemaName(r), () => insert(db)));
    this.rightsCache.clear();
    return info;
  }

  async getRepo(ref: RepoRef): Promise<RepoInfo | undefined> {
    return getRepo(this.db, ref);
  }

  async listRepos(user: string): Promise<RepoInfo[]> {
    return listRepos(this.db, user);
  }

  /** `user`'s own repos and, with `shared`, those shared with them; each with `user`'s access. */
  async listReposWithAccess(user: string, opts: { shared: boolean }): Promise<{ info: RepoInfo; access: RepoAccess }[]> {
    const own = (await listRepos(this.db, user)).map((info) => ({ info, access: 'own' as const }));
    if (!opts.shared) return own;
    const shared = await listSharedRepos(this.db, user);
    return [...own, ...shared.map((s) => ({ info: s.info, access: s.permission }))];
  }

  async deleteRepo(ref: RepoRef): Promise<void> {
    await inTransaction(this.db, (db) => deleteRepo(db, ref));
    this.rightsCache.clear();
  }

  async updateRepo(ref: RepoRef, change: { isPrivate?: boolean | undefined; description?: string | undefined }): Promise<RepoInfo> {
    const info = await inTransaction(this.db, (db) => updateRepo(db, ref, change));
    this.rightsCache.clear();
    return info;
  }

  async setCollaborator(ref: RepoRef, user: string, permission: Permission): Promise<void> {
    await inTransaction(this.db, async (db) => {
      await setCollaborator(db, ref, user, permission);
      await syncRepoForKeys(db, user, schemaName(ref), permission, this.keyDdl);
    });
    this.rightsCache.clear();
  }

  async removeCollaborator(ref: RepoRef, user: string): Promise<void> {
    await inTransaction(this.db, async (db) => {
      await removeCollaborator(db, ref, user);
      await syncRepoForKeys(db, user, schemaName(ref), undefined, this.keyDdl);
    });
    this.rightsCache.clear();
  }

  async listCollaborators(ref: RepoRef): Promise<Collaborator[]> {
    return listCollaborators(this.db, ref);
  }

  /**
   * The cached rights of a user (a full key's) or of a principal (a scoped key's are cut to its
   * scope), if known without a wait: the wire relay's synchronous hot path.
   */
  peekRights(who: string | Principal): Rights | undefined {
    return typeof who === 'string' ? this.rightsCache.get(who) : this.keys.peekRights(who);
  }

  /** The rights snapshot of a user or a principal for the policy engine (cached; dropped on any sharing change). */
  async rights(who: string | Principal): Promise<Rights> {
    if (typeof who !== 'string') return this.keys.rights(who);
    const cached = this.rightsCache.get(who);
    if (cached) return cached;
    const generation = this.rightsCache.generation;
    const { repos, publicOnly } = await reachableRepos(this.db, who);
    const rights: Rights = { user: who, repos, publicRepos: publicOnly, ...(this.tenancy.full && { full: this.tenancy.full }) };
    this.rightsCache.set(who, rights, generation);
    return rights;
  }

  // ── live schema ───────────────────────────────────────────────────────────────────────

  /**
   * Calls `handler` with every schema change of every repo, made on any instance by any path,
   * until the returned function is called. Who may see a change is the caller's business.
   * Serving instances only (`listen`); a change is delivered once it commits.
   */
  onSchemaChange(handler: (change: SchemaChange) => void): () => void {
    const own = (change: SchemaChange) => handler(change); // the same handler may subscribe twice
    this.schemaHandlers.add(own);
    return () => void this.schemaHandlers.delete(own);
  }

  // ── audit log and usage ───────────────────────────────────────────────────────────────

  /** Audit rows, newest first (the admin CLI). */
  auditEntries(filter: AuditFilter): Promise<AuditEntry[]> {
    return listAudit(this.admin, filter);
  }

  /** Hourly usage rows of `user` (every user when undefined), oldest first. */
  usageRows(filter: { user?: string | undefined; since?: Date | undefined }): Promise<UsageRow[]> {
    return listUsage(this.admin, filter);
  }

  /** What `user` keeps stored now: their repos' bytes and their large objects. */
  storage(user: string): Promise<Storage> {
    return storageOf(this.admin, user);
  }

  /** Every user's limits, kept current (see limits.ts). */
  get limits(): Tenancy['limits'] {
    return this.tenancy.limits;
  }

  /**
   * Sets some of `user`'s limits (a number sets it, null goes back to the default, a limit not
   * named stays); every serving process of every instance takes them within a moment.
   */
  setLimits(user: string, change: LimitOverrides): Promise<void> {
    return this.tenancy.set(this.db, user, change);
  }

  /** Stops listening and writes pending last-used times. The cluster is closed by its owner. */
  async close(): Promise<void> {
    this.closed = true;
    this.tenancy.close();
    clearTimeout(this.retryTimer);
    this.citus.close();
    await this.listener?.close();
    await Promise.all([this.keys.close(), this.audit.close(), this.usage.close()]);
  }
}
