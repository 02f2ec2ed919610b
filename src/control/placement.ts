/**
 * On Citus: keeps each user's repos on one node, so that joins among them run (see
 * upstream/citus.ts). Citus places a repo when its first table is created; the placer hears that
 * through the schema-change events and moves the repo to its owner's node while it is small.
 * Needs the live schema events (a superuser admin role); without them repos stay where Citus
 * put them and the operator moves them with `repobase repo move`.
 */
import type pg from 'pg';
import type { Logger } from '../shared/logger.js';
import { nodeName, placeRepo } from '../upstream/citus.js';
import type { SchemaChange } from './events.js';

/** The commands that give a repo a new table, and so maybe its first placement. */
const CREATES_TABLE = new Set(['CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO']);

/** The handler of schema changes that places repos as their tables are created. */
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
