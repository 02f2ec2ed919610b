/** A query of the proxy's own on an upstream session it holds (what a pooled backend holds, what start-up settings make of it). */
import { PgError, SqlState } from '../shared/errors.js';
import { BackendCode, buildQuery, decodeDataRow, decodeErrorResponse, decodeParameterStatus, decodeReadyForQuery } from '../protocol/index.js';
import { ignore, noteParameterStatus, type UpstreamSession } from './session.js';

/** What a query of the proxy's own on a session answered: rows (as text), ParameterStatus values, and its first error. */
export interface OwnQueryResult {
  rows: (string | null)[][];
  reported: [string, string][];
  error: PgError | undefined;
}

/**
 * Runs `sql` (a simple Query) on a session the caller holds, idle, and reads its answers up to
 * the ReadyForQuery. Rejects only if the connection fails; Postgres' errors come in the result.
 */
export function runOwnQuery(session: UpstreamSession, sql: string): Promise<OwnQueryResult> {
  return new Promise((resolve, reject) => {
    const result: OwnQueryResult = { rows: [], reported: [], error: undefined };
    const done = (err?: unknown) => {
      session.sink = ignore;
      session.onGone = ignore;
      if (err === undefined) resolve(result);
      else reject(err instanceof PgError ? err : new PgError(SqlState.ConnectionFailure, 'the upstream connection failed'));
    };
    session.onGone = () => done(new PgError(SqlState.ConnectionFailure, 'the upstream connection was lost'));
    session.sink = (chunk) => {
      try {
        session.reader.push(chunk, (code, frame) => {
          if (code === BackendCode.DataRow) result.rows.push(decodeDataRow(frame));
          else if (code === BackendCode.ErrorResponse) result.error ??= decodeErrorResponse(frame);
          else if (code === BackendCode.ParameterStatus) {
            noteParameterStatus(session, frame);
            const p = decodeParameterStatus(frame);
            result.reported.push([p.name, p.value]);
          } else if (code === BackendCode.ReadyForQuery) {
            session.status = decodeReadyForQuery(frame);
            done();
          }
        });
      } catch (err: unknown) {
        session.socket.destroy();
        done(err);
      }
    };
    session.socket.write(buildQuery(sql));
  });
}
