/**
 * A query opened from the History panel: how it stands (queued, running with the rows stored so
 * far, failed with its error, cancelled), and the result of one run in the background, a page of
 * PAGE_ROWS rows at a time, read from the server as the page is shown (never the whole result).
 */
import { useEffect, useId, useState } from 'react';
import type { QueryInfo } from '../api.ts';
import { toApiError } from '../lib/useResource.ts';
import { ResultGrid } from './ResultGrid.tsx';
import { QueryError, type Field, type Row } from './run.ts';
import { SqlError } from './SqlError.tsx';
import { count, durationOf, elapsed, hasResult, PAGE_ROWS, readResultPage } from './stored.ts';

type Page = { status: 'loading' } | { status: 'ready'; fields: Field[]; rows: Row[] } | { status: 'failed'; error: QueryError | ReturnType<typeof toApiError> };

/** What the query is and how it stands, in a sentence. */
function describe(q: QueryInfo): string {
  const ms = durationOf(q);
  const took = ms === null ? '' : ` in ${elapsed(ms)}`;
  switch (q.status) {
    case 'queued':
      return 'Queued: it starts when one of your running queries ends.';
    case 'running':
      return `Running for ${elapsed(ms ?? 0)}${q.rows_stored > 0 ? `: ${count(q.rows_stored, 'row', 'rows')} stored so far` : ''}.`;
    case 'cancelled':
      return `Cancelled${took}.`;
    case 'failed':
      return `Failed${took}.`;
    case 'succeeded': {
      const done = q.row_count === null ? `${q.command ?? 'Done'}${took}.` : `${q.command === 'SELECT' ? '' : `${q.command ?? ''}: `}${count(q.row_count, 'row', 'rows')}${took}.`;
      if (!q.async) return `${done} It ran without Run in background, so its result was not kept: Re-run it to see it.`;
      if (q.result_expires_at === null) return `${done} Its result is no longer kept: Re-run it to see it.`;
      return done;
    }
  }
}

export function StoredResult({ query }: { query: QueryInfo }) {
  const id = useId();
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<Page>({ status: 'loading' });
  const readable = hasResult(query);
  const total = query.rows_stored;

  useEffect(() => setOffset(0), [query.id]);

  useEffect(() => {
    if (!readable) return;
    const controller = new AbortController();
    const rows: Row[] = [];
    let fields: Field[] = [];
    setPage({ status: 'loading' });
    readResultPage(query.id, offset, PAGE_ROWS, controller.signal, { onFields: (f) => (fields = f), onRows: (batch) => rows.push(...batch) }).then(
      () => setPage({ status: 'ready', fields, rows }),
      (err: unknown) => {
        if (!controller.signal.aborted) setPage({ status: 'failed', error: err instanceof QueryError ? err : toApiError(err) });
      },
    );
    return () => controller.abort();
  }, [query.id, readable, offset]);

  const last = Math.min(total, offset + PAGE_ROWS);
  return (
    <section className="sql-stored" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`} className="sql-stored-title">
        {query.async ? 'Query run in the background' : 'Query'}
      </h2>
      <p className="sql-stored-sql">{query.query_string}</p>
      <p role="status">{describe(query)}</p>
      {query.status === 'failed' && query.error && (
        <SqlError error={new QueryError(query.error.code, query.error.message, query.error.detail, query.error.hint, query.error.position, 0)} where={null} />
      )}
      {readable && total > 0 && (
        <div className="sql-pager">
          <span>
            Rows {(offset + 1).toLocaleString()}–{last.toLocaleString()} of {total.toLocaleString()}
          </span>
          <button type="button" className="button button-small" aria-disabled={offset === 0} onClick={() => offset > 0 && setOffset(Math.max(0, offset - PAGE_ROWS))}>
            Previous page
          </button>
          <button type="button" className="button button-small" aria-disabled={last >= total} onClick={() => last < total && setOffset(offset + PAGE_ROWS)}>
            Next page
          </button>
        </div>
      )}
      {readable && page.status === 'loading' && <p className="muted">Loading rows…</p>}
      {readable && page.status === 'failed' && <SqlError error={page.error} where={null} />}
      {readable && page.status === 'ready' && page.fields.length > 0 && <ResultGrid fields={page.fields} rows={page.rows} version={offset} labelledBy={`${id}-title`} />}
    </section>
  );
}
