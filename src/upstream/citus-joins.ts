/**
 * The join Citus cannot run. Citus joins distributed schemas only when their tables sit on one
 * node (see upstream/citus.ts); a query joining repos on different nodes — another user's
 * public repo elsewhere — is refused in Citus' own words (`0A000 complex joins are only supported
 * when all distributed tables are co-located…`, or `XX000 the query contains a join that requires
 * repartitioning`), which name no repo and suggest settings users may not change. This turns that
 * refusal into one that names two of the repos, where each is, and what to do.
 *
 * Which repo is where comes from a cache of the placements, read from the coordinator at start,
 * every few seconds, after each placement and before each REST explanation: explaining stays
 * synchronous, so the wire relay can swap the error in order (a repo moved in the last seconds
 * may be explained without names).
 */
import type pg from 'pg';
import { parseSync } from 'libpg-query';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { REPO_NODES } from './citus.js';

/** Citus' refusals of a join across nodes, by SQLSTATE and the start of the message. */
const JOIN_REFUSALS: readonly [string, string][] = [
  [SqlState.FeatureNotSupported, 'complex joins are only supported when all distributed tables are'],
  [SqlState.InternalError, 'the query contains a join that requires repartitioning'],
  [SqlState.FeatureNotSupported, 'cannot perform a lateral outer join when a distributed subquery references'],
];

export function isJoinRefusal(err: PgError): boolean {
  return err.fromUpstream && JOIN_REFUSALS.some(([code, start]) => err.code === code && err.message.startsWith(start));
}

/** The schemas a statement names explicitly (`"bob/pub".t`), in order of appearance. */
export function namedSchemas(sql: string): string[] {
  let tree: unknown;
  try {
    tree = parseSync(sql);
  } catch {
    return [];
  }
  const found: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const o = node as Record<string, unknown>;
    const range = o.RangeVar as { schemaname?: unknown } | undefined;
    if (range && typeof range.schemaname === 'string' && !found.includes(range.schemaname)) found.push(range.schemaname);
    for (const key in o) visit(o[key]);
  };
  visit(tree);
  return found;
}

export class Placements {
  private nodes = new Map<string, string>();
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly admin: pg.Pool,
    private readonly log: Logger,
  ) {}

  /** Refreshes every `ms` until the returned function is called. */
  keepFresh(ms: number): () => void {
    const timer = setInterval(() => void this.refresh(), ms);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Reads where every placed repo is (one query; a refresh already running is shared). */
  refresh(): Promise<void> {
    this.refreshing ??= this.admin
      .query<{ schema: string; node: string }>(`SELECT schema, host || ':' || port AS node FROM (${REPO_NODES}) r WHERE placed`)
      .then(
        (res) => {
          this.nodes = new Map(res.rows.map((r) => [r.schema, r.node]));
        },
        (err: unknown) => this.log.warn({ err }, 'could not read where repos are placed'),
      )
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  /** The clear error for Citus' refusal of a join across nodes in `sql`; undefined when `err` is not one. */
  explain(err: PgError, sql: string): PgError | undefined {
    if (!isJoinRefusal(err)) return undefined;
    void this.refresh();
    const placed = namedSchemas(sql).flatMap((schema) => {
      const node = this.nodes.get(schema);
      return node === undefined ? [] : [{ schema, node }];
    });
    const a = placed[0];
    const b = placed.find((p) => a !== undefined && p.node !== a.node);
    const hint =
      'a query can join only repos stored on one node: copy what you need into one of your repos first (INSERT … SELECT, or CREATE TABLE … AS SELECT), then join there';
    if (a === undefined || b === undefined) {
      return new PgError(SqlState.FeatureNotSupported, 'this query joins repos stored on different nodes of the cluster, which cannot be joined', { hint, detail: err.message });
    }
    // Which nodes stays with the operator (`repobase nodes`): users learn only that they differ.
    return new PgError(SqlState.FeatureNotSupported, `repos "${a.schema}" and "${b.schema}" are stored on different nodes of the cluster and cannot be joined`, {
      hint,
      detail: err.message,
    });
  }
}
