import type { ApiError } from '../api.ts';
import type { QueryError } from './run.ts';

/** Every field of a failed statement: SQLSTATE, message, detail, hint, and where it points. */
export function SqlError({ error, where }: { error: QueryError | ApiError; where: { line: number; column: number } | null }) {
  return (
    <div className="alert sql-error" role="alert">
      <p className="alert-message">{error.message}</p>
      <dl className="sql-error-fields">
        {error.code && (
          <div>
            <dt>SQLSTATE</dt>
            <dd className="mono">{error.code}</dd>
          </div>
        )}
        {error.detail && (
          <div>
            <dt>Detail</dt>
            <dd>{error.detail}</dd>
          </div>
        )}
        {error.hint && (
          <div>
            <dt>Hint</dt>
            <dd>{error.hint}</dd>
          </div>
        )}
        {where && (
          <div>
            <dt>Where</dt>
            <dd>
              Line {where.line}, column {where.column} (marked in the editor)
            </dd>
          </div>
        )}
      </dl>
    </div>
  );
}
