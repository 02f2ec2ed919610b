/**
 * Data fetching at the page: `useResource(load, deps)` runs `load` when `deps` change and gives
 * its data, its error and a `reload`. An answer that arrives after a newer request is dropped.
 */
import { useCallback, useEffect, useRef, useState, type DependencyList } from 'react';
import { ApiError } from '../api.ts';

export type Resource<T> =
  | { status: 'loading'; data?: undefined; error?: undefined; reload: () => void }
  | { status: 'ready'; data: T; error?: undefined; reload: () => void }
  | { status: 'error'; data?: undefined; error: ApiError; reload: () => void };

type State<T> = { status: 'loading' } | { status: 'ready'; data: T } | { status: 'error'; error: ApiError };

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(0, '', err instanceof Error ? err.message : String(err));
}

export function useResource<T>(load: () => Promise<T>, deps: DependencyList): Resource<T> {
  const [state, setState] = useState<State<T>>({ status: 'loading' });
  const [generation, setGeneration] = useState(0);
  const latest = useRef(0);

  useEffect(() => {
    const ticket = ++latest.current;
    load().then(
      (data) => {
        if (ticket === latest.current) setState({ status: 'ready', data });
      },
      (err: unknown) => {
        if (ticket === latest.current) setState({ status: 'error', error: toApiError(err) });
      },
    );
    // `load` is a fresh closure on every render; `deps` says when it means something new.
  }, [...deps, generation]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { ...state, reload } as Resource<T>;
}
