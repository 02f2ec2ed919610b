/**
 * The control plane: users, API keys, repos and collaborators, kept in a private schema on the
 * admin pool. Both front ends and the admin CLI go through this one object.
 */
import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { Cluster } from '../upstream/cluster.js';
import { secretFingerprint } from '../upstream/roles.js';
import { inTransaction } from './db.js';
import { CACHE_TTL_MS, listen, type ListenerEvent, type SchemaChange } from './events.js';
import {
  invalidKey,
  insertKey,
  listKeys,
  loadKey,
  loadScramCredentials,
  parseKey,
  revokeKey,
  secretMatches,
  type KeyInfo,
  type NewKey,
  type Principal,
  type ScramCredentials,
  type StoredKey,
} from './keys.js';
import { migrate, schemaEventsInstalled } from './migrations.js';
import { repoPlacer } from './placement.js';
import { hasCitus } from '../upstream/citus.js';
import { isJoinRefusal, Placements } from '../upstream/citus-joins.js';
import type { PgError } from '../shared/errors.js';
import { parseRepoRef, type RepoRef } from './names.js';
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
import { TtlCache } from './ttl-cache.js';
import { LastUsedRecorder } from './last-used.js';

export type { SchemaChange };
export type { Principal, KeyInfo, NewKey, ScramCredentials, RepoInfo, Collaborator, Permission, RepoAccess, UserInfo, RepoRef, WebSession, NewWebSession };

/** What one principal may reach: the policy engine's input. */
export interface Rights {
  user: string;
  repos: ReadonlyMap<string, RepoAccess>;
}

export interface ControlPlaneOptions {
  /** Listen for changes made by other instances (serving processes do; one-shot CLI commands don't). */
  listen: boolean;
}

export class ControlPlane {
  private readonly keys = new TtlCache<string, StoredKey | null>(CACHE_TTL_MS, 10_000);
  private readonly rightsCache = new TtlCache<string, Rights>(CACHE_TTL_MS, 10_000);
  private readonly scram = new TtlCache<string, ScramCredentials | null>(CACHE_TTL_MS, 10_000);
  private readonly lastUsed: LastUsedRecorder;
  private readonly schemaHandlers = new Set<(change: SchemaChange) => void>();
  private listener: { ready: Promise<void>; close(): Promise<void> } | undefined;
  /** Set on a Citus coordinator: where each repo is stored. */
  private placements: Placements | undefined;
  private placer: ((change: SchemaChange) => void) | undefined;

  private constructor(
    private readonly cluster: Cluster,
    private readonly log: Logger,
  ) {
    this.lastUsed = new LastUsedRecorder(cluster.admin, log);
  }

  /** Migrates the control schema, re-keys role passwords if the secret changed, starts listening. */
  static async open(cluster: Cluster, log: Logger, opts: ControlPlaneOptions): Promise<ControlPlane> {
    const plane = new ControlPlane(cluster, log.child({ mod: 'control' }));
    const applied = await migrate(cluster.admin);
    if (applied.length) plane.log.info({ applied }, 'control plane migrated');
    const reset = await inTransaction(cluster.admin, (db) => syncRolePasswords(db, cluster.secret, secretFingerprint(cluster.secret)));
    if (reset) plane.log.warn({ roles: reset }, 'server secret changed: user role passwords reset');
    if (await hasCitus(cluster.admin)) {
      plane.placements = new Placements(cluster.admin, plane.log);
      await plane.placements.refresh();
      const placements = plane.placements;
      plane.placer = repoPlacer(cluster.admin, plane.log, () => void placements.refresh());
    }
    if (opts.listen) {
      plane.listener = listen(cluster.adminConfig, (e) => plane.onEvent(e), plane.log);
      await plane.listener.ready;
      if (!(await schemaEventsInstalled(cluster.admin))) {
        plane.log.warn('live schema updates are off: the event triggers that report schema changes need a superuser admin role, and this one is not (consoles show changes made elsewhere when reloaded)');
      }
    }
    return plane;
  }

  /**
   * A clearer error for an upstream error of `sql`, where repobase knows more than Postgres said:
   * on Citus, a join of repos on different nodes names the repos (see upstream/citus-joins.ts).
   */
  async explainError(err: PgError, sql: string): Promise<PgError | undefined> {
    if (this.placements === undefined || !isJoinRefusal(err)) return undefined;
    await this.placements.refresh();
    return this.placements.explain(err, sql);
  }

  get admin(): pg.Pool {
    return this.cluster.admin;
  }

  private onEvent(e: ListenerEvent): void {
    switch (e.kind) {
      case 'schema':
        this.placer?.(e.change);
        for (const handler of this.schemaHandlers) handler(e.change);
        break;
      case 'key':
        this.keys.delete(e.id);
        this.scram.clear(); // the event names the key, not its user
        break;
      case 'rights':
        this.rightsCache.clear();
        break;
      case 'user':
      case 'lost':
        this.keys.clear();
        this.scram.clear();
        this.rightsCache.clear();
        break;
    }
  }

  // ── users ─────────────────────────────────────────────────────────────────────────────

  /** Creates a user with its role and first API key. */
  createUser(name: string): Promise<NewKey> {
    return inTransaction(this.admin, async (db) => {
      await insertUser(db, name, this.cluster.secret);
      return insertKey(db, name);
    });
  }

  listUsers(): Promise<UserInfo[]> {
    return listUsers(this.admin);
  }

  async deleteUser(name: string): Promise<void> {
    await inTransaction(this.admin, (db) => deleteUser(db, name));
    this.onEvent({ kind: 'user', name });
  }

  // ── people: passwords and console sessions ────────────────────────────────────────────

  /** Creates user `name` as createUser does (role, first key) with a password, and logs them in. */
  async signUp(name: string, password: string): Promise<NewWebSession> {
    assertPassword(password);
    // Hashed before the transaction: the slow part must not hold a connection in a transaction.
    const passwordHash = await hashPassword(password);
    return inTransaction(this.admin, async (db) => {
      await insertUser(db, name, this.cluster.secret);
      await setPassword(db, name, passwordHash);
      return createSession(db, name);
    });
  }

  /** Sets `name`'s console password (42704 for an unknown user); their open sessions end. */
  async setPassword(name: string, password: string): Promise<void> {
    assertPassword(password);
    const passwordHash = await hashPassword(password);
    await inTransaction(this.admin, (db) => setPassword(db, name, passwordHash));
  }

  /** A new session for `name`, or 28P01, the same for an unknown user and a wrong password. */
  async logIn(name: string, password: string): Promise<NewWebSession> {
    if (!(await checkPassword(this.admin, name, password))) throw invalidCredentials();
    return inTransaction(this.admin, (db) => createSession(db, name));
  }

  /**
   * The live session behind cookie id `id`, renewed when due. Read from the control plane on
   * every call, never cached: a log-out must end the session on every instance at once.
   */
  async session(id: string): Promise<WebSession | undefined> {
    const found = await loadSession(this.admin, id);
    if (!found || !needsRenewal(found)) return found;
    const expiresAt = await touchSession(this.admin, id);
    return expiresAt && { ...found, expiresAt, renewed: true };
  }

  /** Ends session `id` (log-out); an unknown id is not an error. */
  endSession(id: string): Promise<void> {
    return deleteSession(this.admin, id);
  }

  // ── API keys ──────────────────────────────────────────────────────────────────────────

  async createKey(user: string): Promise<NewKey> {
    const key = await inTransaction(this.admin, (db) => insertKey(db, user));
    this.scram.clear();
    return key;
  }

  listKeys(user: string): Promise<KeyInfo[]> {
    return listKeys(this.admin, user);
  }

  /** Revokes a key (only `user`'s when given); effective on this instance at once, on others when the NOTIFY arrives. */
  async revokeKey(id: string, user?: string): Promise<void> {
    await inTransaction(this.admin, (db) => revokeKey(db, id, user));
    this.keys.delete(id);
    this.scram.clear();
  }

  /** The SCRAM salt and per-key verifiers of `user`, or undefined for an unknown user (cached like keys). */
  async scramCredentials(user: string): Promise<ScramCredentials | undefined> {
    let found = this.scram.get(user);
    if (found === undefined) {
      const generation = this.scram.generation;
      found = (await loadScramCredentials(this.admin, user)) ?? null;
      this.scram.set(user, found, generation);
    }
    return found ?? undefined;
  }

  /** Marks a key as used (the wire front end, after a SCRAM exchange that matched it). */
  recordKeyUse(keyId: string): void {
    this.lastUsed.record(keyId);
  }

  /** API key → principal, or PgError 28P01. The same check for the REST and wire front ends. */
  async authenticate(key: string): Promise<Principal> {
    const parts = parseKey(key);
    if (!parts) {
      secretMatches(undefined, key); // same work as a real miss
      throw invalidKey();
    }
    let stored = this.keys.get(parts.id);
    if (stored === undefined) {
      const generation = this.keys.generation;
      stored = (await loadKey(this.admin, parts.id)) ?? null;
      this.keys.set(parts.id, stored, generation);
    }
    if (!secretMatches(stored ?? undefined, parts.secret) || !stored) throw invalidKey();
    this.lastUsed.record(parts.id);
    return { user: stored.user, keyId: parts.id };
  }

  // ── repos ─────────────────────────────────────────────────────────────────────────────

  async createRepo(ref: RepoRef | string, opts: { isPrivate?: boolean; description?: string } = {}): Promise<RepoInfo> {
    const r = typeof ref === 'string' ? parseRepoRef(ref) : ref;
    const info = await inTransaction(this.admin, (db) => insertRepo(db, r, { isPrivate: opts.isPrivate ?? true, description: opts.description ?? '' }));
    this.rightsCache.clear();
    return info;
  }

  getRepo(ref: RepoRef): Promise<RepoInfo | undefined> {
    return getRepo(this.admin, ref);
  }

  listRepos(user: string): Promise<RepoInfo[]> {
    return listRepos(this.admin, user);
  }

  /** `user`'s own repos and, with `shared`, those shared with them; each with `user`'s access. */
  async listReposWithAccess(user: string, opts: { shared: boolean }): Promise<{ info: RepoInfo; access: RepoAccess }[]> {
    const own = (await listRepos(this.admin, user)).map((info) => ({ info, access: 'own' as const }));
    if (!opts.shared) return own;
    const shared = await listSharedRepos(this.admin, user);
    return [...own, ...shared.map((s) => ({ info: s.info, access: s.permission }))];
  }

  async deleteRepo(ref: RepoRef): Promise<void> {
    await inTransaction(this.admin, (db) => deleteRepo(db, ref));
    this.rightsCache.clear();
  }

  async updateRepo(ref: RepoRef, change: { isPrivate?: boolean | undefined; description?: string | undefined }): Promise<RepoInfo> {
    const info = await inTransaction(this.admin, (db) => updateRepo(db, ref, change));
    this.rightsCache.clear();
    return info;
  }

  async setCollaborator(ref: RepoRef, user: string, permission: Permission): Promise<void> {
    await inTransaction(this.admin, (db) => setCollaborator(db, ref, user, permission));
    this.rightsCache.clear();
  }

  async removeCollaborator(ref: RepoRef, user: string): Promise<void> {
    await inTransaction(this.admin, (db) => removeCollaborator(db, ref, user));
    this.rightsCache.clear();
  }

  listCollaborators(ref: RepoRef): Promise<Collaborator[]> {
    return listCollaborators(this.admin, ref);
  }

  /** The cached rights snapshot of `user`, if there is one: the wire relay's synchronous hot path. */
  peekRights(user: string): Rights | undefined {
    return this.rightsCache.get(user);
  }

  /** The rights snapshot of `user` for the policy engine (cached; dropped on any sharing change). */
  async rights(user: string): Promise<Rights> {
    const cached = this.rightsCache.get(user);
    if (cached) return cached;
    const generation = this.rightsCache.generation;
    const rights = { user, repos: await reachableRepos(this.admin, user) };
    this.rightsCache.set(user, rights, generation);
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

  /** How many `onSchemaChange` handlers are subscribed: one per open event stream. */
  get schemaSubscribers(): number {
    return this.schemaHandlers.size;
  }

  /** Stops listening and writes pending last-used times. The cluster is closed by its owner. */
  async close(): Promise<void> {
    await this.listener?.close();
    await this.lastUsed.close();
  }
}
