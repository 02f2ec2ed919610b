/**
 * Who is logged in. Loaded once when the console starts (GET /auth/session), set by log-in and
 * sign-up, cleared by log-out and by any 401 (the session ended, e.g. in another tab).
 */
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError, getSession, logOut as apiLogOut, setUnauthorizedHandler, type SessionInfo } from '../api.ts';
import { toApiError } from '../lib/useResource.ts';

export type SessionState =
  | { status: 'loading' }
  | { status: 'error'; error: ApiError }
  /** `ended`: a request answered 401 (the session expired or was ended elsewhere). */
  | { status: 'anonymous'; reason: 'none' | 'logged-out' | 'ended' }
  | { status: 'user'; user: string };

interface SessionContextValue {
  state: SessionState;
  /** After log-in or sign-up. */
  started(session: SessionInfo): void;
  logOut(): Promise<void>;
  retry(): void;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    let current = true;
    getSession().then(
      (session) => current && setState(session ? { status: 'user', user: session.user } : { status: 'anonymous', reason: 'none' }),
      (err: unknown) => current && setState({ status: 'error', error: toApiError(err) }),
    );
    return () => {
      current = false;
    };
  }, [attempt]);

  useEffect(() => {
    setUnauthorizedHandler(() => setState({ status: 'anonymous', reason: 'ended' }));
    return () => setUnauthorizedHandler(null);
  }, []);

  const started = useCallback((session: SessionInfo) => setState({ status: 'user', user: session.user }), []);
  const logOut = useCallback(async () => {
    try {
      await apiLogOut();
    } finally {
      setState({ status: 'anonymous', reason: 'logged-out' });
    }
  }, []);
  const retry = useCallback(() => {
    setState({ status: 'loading' });
    setAttempt((a) => a + 1);
  }, []);

  const value = useMemo(() => ({ state, started, logOut, retry }), [state, started, logOut, retry]);
  return <SessionContext value={value}>{children}</SessionContext>;
}

export function useSession(): SessionContextValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside SessionProvider');
  return value;
}

/** The logged-in user's name; only for pages behind RequireSession. */
export function useUser(): string {
  const { state } = useSession();
  if (state.status !== 'user') throw new Error('useUser without a logged-in user');
  return state.user;
}
