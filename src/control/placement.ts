/**
 * On Citus: keeps each user's repos on one node, so that joins among them run (see
 * upstream/citus-placement.ts). A new repo is placed when it is created (`createPlaced`); where
 * that did not hold, the placer hears of the repo's first table through the schema-change events
 * and moves the repo to its owner's node while it is small. Moves need the live schema events (a
 * superuser admin role); without them the operator moves repos with `repobase repo move`.
 */
import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import type { PgError } from '../shared/errors.js';
import { hasCitus, nodeName } from '../upstream/citus.js';
import { isJoinRefusal, Placements } from '../upstream/citus-joins.js';
import { aimNewRepo, placeRepo, plannedNode } from '../upstream/citus-placement.js';
import type { Queryable } from './db.js';
import type { SchemaChange } from './events.js';

/** The commands that give a repo a new table, and so maybe its first placement. */
const CREATES_TABLE = new Set(['CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO']);

/**
 * Runs `create`, which makes repo `schema` of `owner` in the transaction of `db`, so that Citus
 * places the repo on its owner's node; logs when another creator got in between and the repo
 * will be moved after its first table instead.
 */
export async function createPlaced<T>(db: Queryable, log: Logger, owner: string, schema: string, create: () => Promise<T>): Promise<T> {
  const home = await aimNewRepo(db, owner);
  const made = await create();
  if (home !== undefined) {
    const planned = await plannedNode(db, schema);
    if (planned?.host !== home.host || planned.port !== home.port) {
      log.warn({ repo: schema, home: nodeName(home), planned: planned && nodeName(planned) }, "new repo not placed on its owner's node: it is moved after its first table");
    }
  }
  return made;
}

/** The handler of schema changes that moves repos placed elsewhere once they have tables. */
export function repoPlacer(admin: pg.Pool, log: Logger, onPlaced: () => void): (change: SchemaChange) => void {
  const busy = new Set<string>();
  return (change) => {
    if (change.table === null || !CREATES_TABLE.has(change.command) || busy.has(change.repo)) return;
    busy.add(change.repo);
    placeRepo(admin, change.repo)
      .then(
        (to) => {
          if (!to) return;
          log.info({ repo: change.repo, to: nodeName(to) }, "repo moved to its owner's node");
          onPlaced();
        },
        (err: unknown) => log.warn({ err, repo: change.repo }, "could not move the repo to its owner's node"),
      )
      .finally(() => busy.delete(change.repo));
  };
}

/** On Citus: how often the cache of where repos are placed is read again (see citus-joins.ts). */
const PLACEMENTS_REFRESH_MS = 10_000;

/**
 * The control plane's part on a Citus coordinator (nothing elsewhere): where repos are stored,
 * new repos placed on their owner's node, repos moved there by the placer, and joins of repos on
 * different nodes explained by their names.
 */
export class CitusPlacing {
  private placements: Placements | undefined;
  private placer: ((change: SchemaChange) => void) | undefined;
  private stopRefresh: (() => void) | undefined;
  /** Whether the cluster is a Citus coordinator. */
  on = false;

  constructor(
    private readonly admin: pg.Pool,
    private readonly log: Logger,
  ) {}

  /** Finds out whether the cluster runs Citus, and if so starts keeping track (again on a retried start-up). */
  async start(): Promise<void> {
    if (!(await hasCitus(this.admin))) return;
    this.on = true;
    const placements = (this.placements ??= new Placements(this.admin, this.log));
    await placements.refresh();
    this.stopRefresh ??= placements.keepFresh(PLACEMENTS_REFRESH_MS);
    this.placer = repoPlacer(this.admin, this.log, () => void placements.refresh());
  }

  /** Runs `create` (making repo `schema` of `owner` in `db`'s transaction) so that Citus places it on its owner's node. */
  create<T>(db: Queryable, owner: string, schema: string, create: () => Promise<T>): Promise<T> {
    return this.on ? createPlaced(db, this.log, owner, schema, create) : create();
  }

  /** A schema change, for the placer. */
  changed(change: SchemaChange): void {
    this.placer?.(change);
  }

  /** The clearer error of a join of repos on different nodes, after reading the placements again. */
  async explain(err: PgError, sql: string): Promise<PgError | undefined> {
    if (this.placements === undefined || !isJoinRefusal(err)) return undefined;
    await this.placements.refresh();
    return this.placements.explain(err, sql);
  }

  /** As `explain`, at once, from what is known now. */
  explainNow(err: PgError, sql: string): PgError | undefined {
    return this.placements?.explain(err, sql);
  }

  close(): void {
    this.stopRefresh?.();
  }
}
