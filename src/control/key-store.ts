/**
 * API keys as the front ends use them: created with a scope (key-scope.ts) and, when scoped, a
 * Postgres role of their own (key-roles.ts); checked on every request from a cache (a miss reads
 * the control plane); turned into the principal and the rights the policy judges with; and watched,
 * so that a revocation or an expiry ends what runs with the key — wire sessions and REST
 * statements — on every worker and instance: a revocation sends `NOTIFY repobase_control
 * 'key:<id>'` (events.ts), which every serving process hears, and each process ends its own
 * sessions of an expired key by its own timer.
 */
import type pg from 'pg';
import { timingSafeEqual } from 'node:crypto';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { inTransaction } from './db.js';
import { CACHE_TTL_MS } from './events.js';
import { createKeyRole, dropKeyRole, grantedScope, keyRoleName, terminateRoleBackends } from './key-roles.js';
import { expiredKey, isScoped, keyFromRequest, type KeyMeta, type KeyRequest } from './key-scope.js';
import { keyLabel } from '../shared/key-words.js';
import { insertKey, invalidKey, listKeys, loadKey, loadScramCredentials, parseKey, revokeKey, secretMatches, type KeyInfo, type NewKey, type Principal, type ScramCredentials, type StoredKey } from './keys.js';
import { LastUsedRecorder } from './last-used.js';
import { CONTROL_SCHEMA } from './migrations.js';
import { reachableRepos, type RepoAccess } from './repos.js';
import { TtlCache } from './ttl-cache.js';
import type { Rights } from '../policy/types.js';

/** What runs with a key and must end with it: a REST statement's cancel flag, a wire session. */
export interface KeyWatcher {
  /** `reason`: why, in words (`API key "etl" (rb_…) was revoked`). */
  cancel(reason: string): void;
}

interface Watched {
  user: string;
  meta: KeyMeta;
  watchers: Set<KeyWatcher>;
  timer: NodeJS.Timeout | undefined;
}

/** setTimeout's longest delay; a later expiry is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Keys watched at most (the entries of keys nothing runs with are dropped past it). */
const MAX_WATCHED = 10_000;
/** How often serving instances drop the roles of keys that expired. */
const EXPIRED_SWEEP_MS = 60_000;

interface Cached {
  stored: StoredKey;
  /** Made once per key: every request of a cached key gets the same object. */
  principal: Principal;
  /** The secret's bytes, once one matched the stored hash (see `matches`). */
  secret?: Buffer;
}

/**
 * Whether `secret` is the cached key's: against its SHA-256 the first time, then against the bytes
 * that matched (UTF-8, as the hash reads it: one string, one byte sequence), in constant time
 * (≈ 0.1 µs where the hash took ≈ 0.6, on every REST request). The bytes are kept as long as the
 * key's row is (CACHE_TTL_MS, or until the key changes).
 */
function matches(cached: Cached | null, secret: string): boolean {
  if (cached?.secret !== undefined) {
    const given = Buffer.from(secret, 'utf8');
    return given.length === cached.secret.length && timingSafeEqual(given, cached.secret);
  }
  if (!secretMatches(cached?.stored, secret) || !cached) return false;
  cached.secret = Buffer.from(secret, 'utf8');
  return true;
}

export interface KeyStoreDeps {
  /** The admin pool, once the control plane is ready (08006 before). */
  admin(): pg.Pool;
  /** The admin pool as it is, for background work (last-used times, sweeps). */
  pool: pg.Pool;
  secret: string;
  log: Logger;
  /** The user's rights snapshot (cached by the control plane). */
  rights(user: string): Promise<Rights>;
  peekRights(user: string): Rights | undefined;
  /** Whether the service's event triggers let write keys change structure (migration 12 with a superuser). */
  ddl(): boolean;
}

export class KeyStore {
  private readonly keys = new TtlCache<string, Cached | null>(CACHE_TTL_MS, 10_000);
  private readonly scram = new TtlCache<string, ScramCredentials | null>(CACHE_TTL_MS, 10_000);
  /** Rights of scoped keys, by key id, with the user's snapshot they were made from. */
  private readonly scoped = new Map<string, { base: Rights; rights: Rights }>();
  private readonly watched = new Map<string, Watched>();
  private readonly lastUsed: LastUsedRecorder;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly deps: KeyStoreDeps) {
    this.lastUsed = new LastUsedRecorder(deps.pool, deps.log);
  }

  // ── making, listing, revoking ─────────────────────────────────────────────────────────

  /**
   * A new key of `user` as `request` describes it (an empty one: a full key). A listed repo the
   * user neither owns nor collaborates on is 3F000 (404, as a missing repo); write access to a
   * repo the user may only read is 42501.
   */
  async create(user: string, request: KeyRequest = {}): Promise<NewKey> {
    const meta = keyFromRequest(request);
    const key = await inTransaction(this.deps.admin(), async (db) => {
      const made = await insertKey(db, user, meta);
      if (!isScoped(meta)) return made;
      const { repos: reach, publicOnly } = await reachableRepos(db, user);
      for (const repo of meta.repos ?? []) {
        const access = publicOnly.has(repo) ? undefined : reach.get(repo);
        if (access === undefined) throw new PgError(SqlState.InvalidSchemaName, `repo "${repo}" does not exist`);
        if (meta.access === 'write' && access === 'read') {
          throw new PgError(SqlState.InsufficientPrivilege, `repo "${repo}" is read-only for you: a key for it can only read`, { hint: 'ask for "access": "read", or ask its owner for write access' });
        }
      }
      await createKeyRole(db, this.deps.secret, keyRoleName(user, made.id), meta, grantedScope(meta, reach, publicOnly), this.deps.ddl());
      return made;
    });
    this.scram.clear();
    return key;
  }

  list(user: string): Promise<KeyInfo[]> {
    return listKeys(this.deps.admin(), user);
  }

  /**
   * Revokes a key (only `user`'s when given): its role is dropped and its backends terminated, and
   * what runs with it here ends at once; elsewhere when the NOTIFY arrives.
   */
  async revoke(id: string, user?: string): Promise<void> {
    const role = await inTransaction(this.deps.admin(), async (db) => {
      const revoked = await revokeKey(db, id, user);
      return revoked.access === 'full' ? undefined : dropKeyRole(db, keyRoleName(revoked.user, id));
    });
    this.forget(id);
    if (role !== undefined) await terminateRoleBackends(this.deps.admin(), role).catch((err: unknown) => this.deps.log.warn({ err }, 'terminating the backends of a revoked key failed'));
    this.end(id, 'revoked');
  }

  // ── checking ──────────────────────────────────────────────────────────────────────────

  /** The SCRAM salt and per-key verifiers of `user`, or undefined for an unknown user (cached like keys). */
  async scramCredentials(user: string): Promise<ScramCredentials | undefined> {
    let found = this.scram.get(user);
    if (found === undefined) {
      const generation = this.scram.generation;
      found = (await loadScramCredentials(this.deps.admin(), user)) ?? null;
      this.scram.set(user, found, generation);
    }
    return found ?? undefined;
  }

  /** Marks a key as used (the wire front end, after a SCRAM exchange that matched it). */
  recordUse(keyId: string): void {
    this.lastUsed.record(keyId);
  }

  /** API key → principal, or PgError 28P01 (a wrong key) / 28000 (an expired one). */
  async authenticate(key: string): Promise<Principal> {
    const known = this.peek(key);
    if (known) return known;
    const parts = parseKey(key)!;
    const generation = this.keys.generation;
    const stored = (await loadKey(this.deps.admin(), parts.id)) ?? null;
    const cached = stored && { stored, principal: principalOf(parts.id, stored.user, stored.meta) };
    this.keys.set(parts.id, cached, generation);
    return this.check(parts, cached);
  }

  /**
   * The principal of key `keyId` of `user` as the key is now, for a statement it sent earlier (an
   * async query that waited): 28P01 when it was revoked, 28000 when it expired. A console
   * session's label (`session:…`) is the user itself.
   */
  async principalOfKey(user: string, keyId: string): Promise<Principal> {
    if (keyId.startsWith('session:')) return { user, keyId, role: user };
    const stored = await loadKey(this.deps.admin(), keyId);
    if (stored === undefined || stored.user !== user) throw invalidKey();
    const expiresAt = stored.meta.expiresAt;
    if (expiresAt !== null && expiresAt.getTime() <= Date.now()) throw expiredKey(keyId, stored.meta, SqlState.InvalidAuthorizationSpecification);
    return principalOf(keyId, user, stored.meta);
  }

  /** `authenticate` without a wait when the key's row is cached; undefined when it must be read first. */
  peek(key: string): Principal | undefined {
    const parts = parseKey(key);
    if (!parts) {
      secretMatches(undefined, key); // same work as a real miss
      throw invalidKey();
    }
    const cached = this.keys.get(parts.id);
    return cached === undefined ? undefined : this.check(parts, cached);
  }

  private check(parts: { id: string; secret: string }, cached: Cached | null): Principal {
    if (!matches(cached, parts.secret) || !cached) throw invalidKey();
    const expiresAt = cached.stored.meta.expiresAt;
    if (expiresAt !== null && expiresAt.getTime() <= Date.now()) throw expiredKey(parts.id, cached.stored.meta, SqlState.InvalidAuthorizationSpecification);
    this.lastUsed.record(parts.id);
    return cached.principal;
  }

  /** Whether write keys may change structure here (the event triggers of migration 12 are installed). */
  get canChangeStructure(): boolean {
    return this.deps.ddl();
  }

  // ── rights ────────────────────────────────────────────────────────────────────────────

  /**
   * The rights a principal's statements are judged with, if known without a wait: the user's
   * snapshot for a full key or a console session, a scoped key's cut from it (made once per
   * snapshot and key: the same object while neither changes, which the policy's caches rely on).
   */
  peekRights(principal: Principal): Rights | undefined {
    const base = this.deps.peekRights(principal.user);
    if (base === undefined || !isScoped(principal.key)) return base;
    const made = this.scoped.get(principal.keyId);
    if (made?.base === base) return made.rights;
    const rights = scopeRights(base, principal.keyId, principal.key, this.deps.ddl());
    if (this.scoped.size >= 10_000) this.scoped.clear();
    this.scoped.set(principal.keyId, { base, rights });
    return rights;
  }

  async rights(principal: Principal): Promise<Rights> {
    const base = await this.deps.rights(principal.user);
    return this.peekRights(principal) ?? (isScoped(principal.key) ? scopeRights(base, principal.keyId, principal.key, this.deps.ddl()) : base);
  }

  // ── ending what runs with a key ───────────────────────────────────────────────────────

  /**
   * Calls `watcher.cancel` (with the reason in words) when the principal's key is revoked,
   * expires, or its user is deleted, until `unwatch`. Nothing for a console session.
   */
  watch(principal: Principal, watcher: KeyWatcher): void {
    if (principal.key === undefined) return;
    const id = principal.keyId;
    let w = this.watched.get(id);
    if (w === undefined) {
      if (this.watched.size >= MAX_WATCHED) this.pruneWatched();
      w = { user: principal.user, meta: principal.key, watchers: new Set(), timer: undefined };
      this.watched.set(id, w);
      this.arm(id, w);
    }
    w.watchers.add(watcher);
  }

  /**
   * Stops `watch`. A key's entry stays when its last watcher leaves: the REST API watches every
   * request of a key, and one request at a time would otherwise make and drop it each time.
   */
  unwatch(principal: Principal, watcher: KeyWatcher): void {
    this.watched.get(principal.keyId)?.watchers.delete(watcher);
  }

  /** Drops the entries of keys nothing runs with now. */
  private pruneWatched(): void {
    for (const [id, w] of this.watched) {
      if (w.watchers.size > 0) continue;
      clearTimeout(w.timer);
      this.watched.delete(id);
    }
  }

  /** The timer that ends the key's watchers at its expiry. */
  private arm(id: string, w: Watched): void {
    const at = w.meta.expiresAt?.getTime();
    if (at === undefined) return;
    const wait = at - Date.now();
    w.timer = setTimeout(() => (wait > MAX_TIMER_MS ? this.arm(id, w) : this.end(id, 'expired')), Math.max(0, Math.min(wait, MAX_TIMER_MS)));
    w.timer.unref();
  }

  /** Ends what runs with key `id` here. */
  private end(id: string, why: 'revoked' | 'expired' | 'deleted'): void {
    const w = this.watched.get(id);
    if (w === undefined) return;
    this.watched.delete(id);
    clearTimeout(w.timer);
    const label = keyLabel(id, w.meta.name);
    const reason =
      why === 'expired' ? `${label} expired at ${w.meta.expiresAt?.toISOString()}` : why === 'revoked' ? `${label} was revoked` : `the user "${w.user}" of ${label} was deleted`;
    for (const watcher of w.watchers) watcher.cancel(reason);
  }

  /** A key changed somewhere (NOTIFY): its cache entry goes, and what runs with it ends if it is gone. */
  changed(id: string): void {
    this.forget(id);
    if (this.watched.has(id)) void this.recheck([id], 'revoked');
  }

  /** A user was deleted (`user`), or events may have been missed: everything is read again. */
  changedAll(user?: string): void {
    this.keys.clear();
    this.scram.clear();
    this.scoped.clear();
    const ids = [...this.watched].filter(([, w]) => user === undefined || w.user === user).map(([id]) => id);
    void this.recheck(ids, user === undefined ? 'revoked' : 'deleted');
  }

  private forget(id: string): void {
    this.keys.delete(id);
    this.scoped.delete(id);
    this.scram.clear(); // the event names the key, not its user
  }

  /** Ends the watchers of those of `ids` whose key is no longer live. */
  private async recheck(ids: readonly string[], why: 'revoked' | 'deleted'): Promise<void> {
    for (const id of ids) {
      try {
        if ((await loadKey(this.deps.admin(), id)) === undefined) this.end(id, why);
      } catch (err: unknown) {
        this.deps.log.warn({ err, keyId: id }, 'checking a key after a change failed');
      }
    }
  }

  // ── roles of expired keys ─────────────────────────────────────────────────────────────

  /** Drops the roles of expired keys now and every minute (serving instances; one at a time across them). */
  startExpirySweep(): void {
    const sweep = () => void this.sweepExpired().catch((err: unknown) => this.deps.log.warn({ err }, 'dropping the roles of expired keys failed'));
    sweep();
    this.sweeper = setInterval(sweep, EXPIRED_SWEEP_MS);
    this.sweeper.unref();
  }

  /** Drops the role of every scoped key that expired (its sessions were ended by their own timers); returns how many. */
  async sweepExpired(): Promise<number> {
    const dropped = await inTransaction(this.deps.pool, async (db) => {
      const lock = await db.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('repobase.key-expiry')) AS ok");
      if (!lock.rows[0]?.ok) return [];
      const expired = await db.query<{ role: string }>(
        `SELECT k.user_name || '#' || k.id AS role FROM ${CONTROL_SCHEMA}.api_keys k
          WHERE k.access <> 'full' AND k.revoked_at IS NULL AND k.expires_at <= now()
            AND EXISTS (SELECT FROM pg_roles r WHERE r.rolname = k.user_name || '#' || k.id)`,
      );
      const oids: number[] = [];
      for (const { role } of expired.rows) {
        const oid = await dropKeyRole(db, role);
        if (oid !== undefined) oids.push(oid);
      }
      return oids;
    });
    for (const oid of dropped) await terminateRoleBackends(this.deps.pool, oid);
    return dropped.length;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const w of this.watched.values()) clearTimeout(w.timer);
    await this.lastUsed.close();
  }
}

/** The principal of a key: its role is the user's own for a full key, the key's for a scoped one. */
export function principalOf(id: string, user: string, meta: KeyMeta): Principal {
  return { user, keyId: id, role: isScoped(meta) ? keyRoleName(user, id) : user, key: meta };
}

/**
 * A scoped key's rights: the listed repos (or all) at its access — a read key reads, a write key
 * keeps what its user may do there — and public repos for reading, as for anyone.
 */
export function scopeRights(base: Rights, id: string, meta: KeyMeta, ddl: boolean): Rights {
  const repos = new Map<string, RepoAccess>();
  for (const [schema, access] of base.repos) {
    if (meta.repos === null || meta.repos.includes(schema)) repos.set(schema, meta.access === 'read' ? 'read' : access);
    else if (base.publicRepos?.has(schema) === true) repos.set(schema, 'read');
  }
  return {
    user: base.user,
    repos,
    publicRepos: base.publicRepos,
    ...(base.full && { full: base.full }),
    key: { id, name: meta.name, access: meta.access === 'write' ? 'write' : 'read', repos: meta.repos, reach: base.repos, ddl },
  };
}
