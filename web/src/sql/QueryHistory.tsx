/**
 * The History panel: the person's latest queries from the server — those run in the background
 * and every other statement, from this console or anywhere else — each with its status, how long
 * it took and its rows. Open shows it (and pages through its result), Re-run runs it again the way
 * it ran, CSV downloads its stored result, Cancel stops it while it is queued or running.
 */
import { useId } from 'react';
import type { ApiError, QueryInfo } from '../api.ts';
import { count, durationOf, elapsed, hasResult, isActive } from './stored.ts';

interface Props {
  queries: QueryInfo[] | null;
  error: ApiError | null;
  /** The query shown in the results, if one is. */
  opened: string | null;
  onOpen(q: QueryInfo): void;
  onRerun(q: QueryInfo): void;
  onDownload(q: QueryInfo): void;
  onCancel(q: QueryInfo): void;
  onRefresh(): void;
}

const STATUS_LABELS: Record<QueryInfo['status'], string> = {
  queued: 'Queued',
  running: 'Running',
  succeeded: 'Succeeded',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

const time = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Duration, rows, what failed and when: `0.42 s · 3 rows · 10:41:07`, `0.01 s · division by zero (22012) · 10:41:09`. */
function meta(q: QueryInfo): string {
  const parts: string[] = [];
  const ms = durationOf(q);
  if (ms !== null) parts.push(elapsed(ms));
  if (q.status === 'running' && q.rows_stored > 0) parts.push(`${count(q.rows_stored, 'row', 'rows')} so far`);
  else if (q.row_count !== null) parts.push(count(q.row_count, 'row', 'rows'));
  if (q.error && q.status === 'failed') parts.push(`${cut(q.error.message, 80)} (${q.error.code})`);
  parts.push(time.format(new Date(q.submitted_at)));
  return parts.join(' · ');
}

export function QueryHistory({ queries, error, opened, onOpen, onRerun, onDownload, onCancel, onRefresh }: Props) {
  const id = useId();
  return (
    <section className="sql-history" aria-labelledby={`${id}-heading`}>
      <div className="sql-history-head">
        <h2 id={`${id}-heading`}>History</h2>
        <button type="button" className="button button-small button-quiet" onClick={onRefresh}>
          Refresh
        </button>
      </div>
      {error && (
        <p className="field-error" role="alert">
          {error.message}
        </p>
      )}
      {queries !== null && queries.length === 0 && <p className="muted sql-history-empty">Statements you run, here or elsewhere, appear here.</p>}
      {queries !== null && queries.length > 0 && (
        <ol className="sql-history-list">
          {queries.map((q) => {
            const textId = `${id}-${q.id}`;
            return (
              <li key={q.id} className="sql-query" aria-current={opened === q.id ? 'true' : undefined}>
                <div className="sql-query-top">
                  <span className={`badge sql-status-${q.status}`}>{STATUS_LABELS[q.status]}</span>
                  {q.async && <span className="sql-query-kind">in background</span>}
                </div>
                <p className="sql-query-text" id={textId} title={q.query_string}>
                  {q.query_string}
                </p>
                <p className="sql-query-meta">{meta(q)}</p>
                <div className="sql-query-actions">
                  <button type="button" className="button button-small" aria-describedby={textId} onClick={() => onOpen(q)}>
                    Open
                  </button>
                  {!q.query_truncated && (
                    <button type="button" className="button button-small" aria-describedby={textId} onClick={() => onRerun(q)}>
                      Re-run
                    </button>
                  )}
                  {hasResult(q) && (
                    <button type="button" className="button button-small" aria-label="Download result as CSV" aria-describedby={textId} onClick={() => onDownload(q)}>
                      CSV
                    </button>
                  )}
                  {isActive(q) && (
                    <button type="button" className="button button-small button-danger-quiet" aria-describedby={textId} onClick={() => onCancel(q)}>
                      Cancel
                    </button>
                  )}
                </div>
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
