/** What the `POST /query/` routes need (query.ts, query-async.ts), and the body they take. */
import type { Static } from 'typebox';
import type { ControlPlane } from '../../control/control-plane.js';
import type { Policy } from '../../policy/index.js';
import type { TypeCatalog } from '../../upstream/query-types.js';
import type { SessionPool } from '../../upstream/session-pool.js';
import type { AsyncQueries } from '../async-queries.js';
import type { RunningQueries } from '../running-queries.js';
import type { QueryRequest } from '../schemas.js';

/** What the query route needs, injected by the composition root. */
export interface QueryDeps {
  control: ControlPlane;
  policy: Policy;
  /** Raw upstream sessions per role, reset lazily (in the round trip of the next statement). */
  sessions: SessionPool;
  /** Start-up settings of REST sessions: search_path, statement timeout, application name. */
  sessionSettings: Readonly<Record<string, string>>;
  types: TypeCatalog;
  /** Row cap of one answer (config maxResultRows). */
  maxRows: number;
  /** Queries named by `X-Query-Id`, for `POST /query/<id>/cancel`. */
  running: RunningQueries;
  /** Async queries and the query history. */
  queries: AsyncQueries;
  /** Config asyncResultTtlMs, shown as when a result expires. */
  resultTtlMs: number;
}

/** The body of `POST /query/`. */
export type QueryBody = Static<typeof QueryRequest>;
