/**
 * Pooling by transaction, the hand-over after a transaction: what the proxy asks the backend
 * before letting it go (what code out of its sight left there, the sequence state the client's
 * statements made), and how the backend goes back to the pool when the client leaves it.
 */
import { buildQuery } from '../protocol/index.js';
import type { Return } from '../upstream/session-pool.js';
import { sequenceCaptures, stateChecks } from '../observe/metrics.js';
import type { BackendState } from './backend-state.js';
import type { ClientState } from './client-state.js';
import type { Internal } from './requests.js';
import { checkSql, parseCheck } from './state-check.js';
import { captureSql, parseCapture, type SequenceFreeTables } from './sequences.js';

/** Server statements a backend may hold before it is reset when given back. */
const MAX_STATEMENTS_PER_BACKEND = 500;

/** What the hand-over needs of the connection. */
export interface HandOverDeps {
  /** Told that what a backend holds of the client's session could not be learnt: the session cannot go on safely. */
  onLost(message: string): void;
  /** The client's role, and the tables known to take no default from a sequence (sequences.ts). */
  role: string;
  sequenceFree: SequenceFreeTables;
}

/**
 * The transaction is over and nothing is in flight: the check to run first (code out of the
 * proxy's sight ran), or whether the backend goes back to the pool.
 */
export function afterTransaction(client: ClientState, deps: HandOverDeps, backend: BackendState): Internal | 'release' | 'keep' {
  if (client.needsCheck) {
    stateChecks.value++;
    backend.unnamed = undefined; // a Query drops the unnamed statement: the client's is made again if it binds it
    let row: (string | null)[] | undefined;
    return {
      frames: [buildQuery(checkSql())],
      onRow: (r) => (row = r),
      done: (error) => {
        if (error !== undefined || row === undefined) return deps.onLost(`asking a pooled backend for the session's state failed${error ? `: ${errorText(error)}` : ''}`);
        client.applyCheck(parseCheck(row), backend);
      },
    };
  }
  const capture = captureSequences(client, deps, backend);
  if (capture !== undefined) return capture;
  return client.pinned ? 'keep' : 'release';
}

/** After a transaction that may have made sequence state: the query that captures it (sequences.ts), if any is left to ask. */
function captureSequences(client: ClientState, deps: HandOverDeps, backend: BackendState): Internal | undefined {
  const writes = client.sequenceWrites;
  if (writes === undefined) return undefined;
  client.sequenceWrites = undefined;
  const { role, sequenceFree } = deps;
  const path = client.other.get('search_path')?.sql ?? '';
  const q = captureSql(writes, (table) => sequenceFree.has(role, path, table));
  if (q === undefined) return undefined;
  sequenceCaptures.value++;
  backend.unnamed = undefined; // a Query drops the unnamed statement
  let row: (string | null)[] | undefined;
  return {
    frames: [buildQuery(q.sql)],
    onRow: (r) => (row = r),
    done: (error) => {
      if (error !== undefined || row === undefined) return; // not captured: currval reads the backend's own, as before
      const { state, free } = parseCapture(row);
      client.capturedSequences(state, backend);
      if (free.length > 0) sequenceFree.add(role, path, free);
    },
  };
}

/**
 * How a backend goes back when the client leaves (`clean`: nothing in flight, no transaction
 * open). `unread`: answers were drained unread (settled): what they changed on the backend
 * (settings, statements) is not known, so it is reset.
 */
export function returnHow(client: ClientState, backend: BackendState, clean: boolean, unread = false): Return {
  if (!clean) return 'close';
  if (unread || client.pinned || backend.statementCount > MAX_STATEMENTS_PER_BACKEND) {
    backend.reset();
    return 'reset';
  }
  return 'keep';
}

function errorText(frame: Buffer): string {
  const m = /M([^\0]*)\0/.exec(frame.toString('utf8', 5));
  return m?.[1] ?? 'an error';
}
