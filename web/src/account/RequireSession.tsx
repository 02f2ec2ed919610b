import type { ReactNode } from 'react';
import { Redirect, useLocation, useSearch } from 'wouter';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { loginPath } from './returnPath.ts';
import { useSession } from './session.tsx';

/** Renders its children for a logged-in user; sends anyone else to /login, and back after. */
export function RequireSession({ children }: { children: ReactNode }) {
  const { state, retry } = useSession();
  const [path] = useLocation();
  const search = useSearch();
  switch (state.status) {
    case 'loading':
      return (
        <main className="page" id="main">
          <p className="muted" role="status">
            Loading…
          </p>
        </main>
      );
    case 'error':
      return (
        <main className="page" id="main">
          <h1 className="page-title">repobase is not answering</h1>
          <ErrorMessage error={state.error} />
          <button type="button" className="button" onClick={retry}>
            Try again
          </button>
        </main>
      );
    case 'anonymous':
      // After "Log out" start afresh at /login; otherwise come back here after logging in.
      return <Redirect to={state.reason === 'logged-out' ? '/login' : loginPath(path, search)} replace />;
    case 'user':
      return children;
  }
}
