/**
 * The person's latest queries from the server (`GET /queries/`): those run in the background and
 * every statement run here or elsewhere. Read again on demand (after a run, a cancel), and every
 * second while one of them is queued or running, until none is.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { listQueries, type ApiError, type QueryInfo } from '../api.ts';
import { toApiError } from '../lib/useResource.ts';
import { isActive } from './stored.ts';

/** Queries the panel shows. */
const LIMIT = 50;
const POLL_MS = 1000;

export function useQueryHistory(): { queries: QueryInfo[] | null; error: ApiError | null; refresh: () => void } {
  const [queries, setQueries] = useState<QueryInfo[] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const ticket = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const refresh = useCallback(() => {
    clearTimeout(timer.current);
    const mine = ++ticket.current;
    listQueries(LIMIT).then(
      (list) => {
        if (mine !== ticket.current) return;
        setQueries(list);
        setError(null);
        if (list.some(isActive)) timer.current = setTimeout(refresh, POLL_MS);
      },
      (err: unknown) => {
        if (mine === ticket.current) setError(toApiError(err));
      },
    );
  }, []);

  useEffect(() => {
    refresh();
    return () => {
      ticket.current++;
      clearTimeout(timer.current);
    };
  }, [refresh]);

  return { queries, error, refresh };
}
