/**
 * The console's one client of /api/v1beta: JSON in and out, the session cookie sent along, the
 * CSRF token in the `X-CSRF-Token` header of every request that changes something, and every
 * error answer turned into an ApiError. Types come from the server's own schemas (types only:
 * nothing of the server is bundled).
 */
import type { Static } from 'typebox';
import type {
  CollaboratorList,
  ConnectionInfo,
  CreateKey,
  CreateRepo,
  Credentials,
  ErrorBody,
  KeyList,
  NewKey,
  QueryAccepted,
  QueryInfo,
  QueryList,
  Repo,
  RepoDetail,
  RepoList,
  SessionInfo,
  UpdateRepo,
  UsageList,
} from '../../src/http/schemas.ts';

export type { Collaborator, ConnectionInfo, KeyInfo, NewKey, QueryAccepted, QueryInfo, Repo, RepoDetail, SessionInfo } from '../../src/http/schemas.ts';
export type Permission = 'read' | 'write';
export type Access = Repo['permission'];
export type NewRepo = Static<typeof CreateRepo>;
export type RepoChanges = Static<typeof UpdateRepo>;
/** What a new key reaches: a name, repos (or every repo), read / write / full access, an expiry. */
export type KeyRequest = Static<typeof CreateKey>;
type ErrorJson = Static<typeof ErrorBody>['error'];

const BASE = '/api/v1beta';

/** A failed request: the server's error (SQLSTATE code, message, hint) and the HTTP status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly hint: string | null = null,
    readonly detail: string | null = null,
  ) {
    super(message);
  }

  get notFound(): boolean {
    return this.status === 404;
  }
}

let csrfToken: string | null = null;
let onUnauthorized: (() => void) | null = null;

/** Called when a request of a logged-in page answers 401: the session ended (e.g. in another tab). */
export function setUnauthorizedHandler(handler: (() => void) | null): void {
  onUnauthorized = handler;
}

interface RequestOptions {
  body?: unknown;
  /** false for the auth endpoints, whose 401 is an answer, not a lost session. */
  session?: boolean;
}

async function request<T>(method: string, path: string, { body, session = true }: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== null) headers['X-CSRF-Token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(BASE + path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, '08006', 'Could not reach the server.', 'Check your network connection and try again.');
  }
  if (res.status === 204) return undefined as T;
  if (res.ok) return (await res.json()) as T;
  const error = await errorOf(res);
  if (res.status === 401 && session) onUnauthorized?.();
  throw error;
}

/** The ApiError of a failed answer; a body that is not ours still gives a message with the status. */
async function errorOf(res: Response): Promise<ApiError> {
  try {
    const body = (await res.json()) as { error?: Partial<ErrorJson> };
    const e = body.error;
    if (e && typeof e.message === 'string') {
      return new ApiError(res.status, e.code ?? '', e.message, e.hint ?? null, e.detail ?? null);
    }
  } catch {
    // not JSON: fall through
  }
  const status = res.statusText ? `${res.status} ${res.statusText}` : String(res.status);
  return new ApiError(res.status, '', `The server answered ${status}.`);
}

function remember(session: SessionInfo): SessionInfo {
  csrfToken = session.csrf_token;
  return session;
}

const segment = encodeURIComponent;
const repoPath = (owner: string, repo: string) => `/repos/${segment(owner)}/${segment(repo)}/`;

// --- account -------------------------------------------------------------------------------

/** The current session, or null when nobody is logged in. */
export async function getSession(): Promise<SessionInfo | null> {
  try {
    return remember(await request<SessionInfo>('GET', '/auth/session', { session: false }));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export async function logIn(credentials: Credentials): Promise<SessionInfo> {
  return remember(await request<SessionInfo>('POST', '/auth/login', { body: credentials, session: false }));
}

export async function signUp(credentials: Credentials): Promise<SessionInfo> {
  return remember(await request<SessionInfo>('POST', '/auth/signup', { body: credentials, session: false }));
}

export async function logOut(): Promise<void> {
  try {
    await request<void>('POST', '/auth/logout', { session: false });
  } finally {
    csrfToken = null;
  }
}

// --- repos ---------------------------------------------------------------------------------

export const getConnectionInfo = () => request<ConnectionInfo>('GET', '/connection');

/** Your own repos and the ones shared with you. */
export const listRepos = async (): Promise<Repo[]> => (await request<RepoList>('GET', '/repos/?include=shared')).repos;

export const createRepo = (repo: NewRepo) => request<Repo>('POST', '/repos/', { body: repo });

export const getRepo = (owner: string, repo: string) => request<RepoDetail>('GET', repoPath(owner, repo));

export const updateRepo = (owner: string, repo: string, changes: RepoChanges) =>
  request<Repo>('PATCH', repoPath(owner, repo), { body: changes });

export const deleteRepo = (owner: string, repo: string) => request<void>('DELETE', repoPath(owner, repo));

// --- sharing -------------------------------------------------------------------------------

export const listCollaborators = async (owner: string, repo: string) =>
  (await request<CollaboratorList>('GET', `${repoPath(owner, repo)}collaborators/`)).collaborators;

export const setCollaborator = (owner: string, repo: string, user: string, permission: Permission) =>
  request<unknown>('PUT', `${repoPath(owner, repo)}collaborators/${segment(user)}`, { body: { permission } });

export const removeCollaborator = (owner: string, repo: string, user: string) =>
  request<void>('DELETE', `${repoPath(owner, repo)}collaborators/${segment(user)}`);

// --- API keys ------------------------------------------------------------------------------

export const listKeys = async () => (await request<KeyList>('GET', '/keys/')).keys;

/** A new key (full, or as `scope` says); its secret is in the answer this once. */
export const createKey = (scope: KeyRequest = {}) => request<NewKey>('POST', '/keys/', { body: scope });

export const revokeKey = (id: string) => request<void>('DELETE', `/keys/${segment(id)}`);

// --- usage and limits ----------------------------------------------------------------------

export type UsageInfo = UsageList;

/** Your usage of the last hours, what you keep stored, your limits and what you use of them now. */
export const getUsage = () => request<UsageList>('GET', '/usage/?since=1h');

// --- queries -------------------------------------------------------------------------------

/**
 * `POST /query/` with the answer as text: the caller parses it (table/exact-json.ts) so that
 * numbers keep every digit Postgres printed, which `res.json()` would round. Failures are
 * ApiErrors as for every other request; `signal` lets a page drop a request it no longer needs.
 */
export async function postQueryText(queryString: string, signal?: AbortSignal): Promise<string> {
  const headers: Record<string, string> = { Accept: 'application/json', 'Content-Type': 'application/json' };
  if (csrfToken !== null) headers['X-CSRF-Token'] = csrfToken;
  try {
    const res = await fetch(`${BASE}/query/`, {
      method: 'POST',
      headers,
      credentials: 'same-origin',
      body: JSON.stringify({ query_string: queryString }),
      signal,
    });
    if (res.ok) return await res.text();
    const error = await errorOf(res);
    if (res.status === 401) onUnauthorized?.();
    throw error;
  } catch (err) {
    if (err instanceof ApiError || (err instanceof DOMException && err.name === 'AbortError')) throw err;
    throw new ApiError(0, '08006', 'Could not reach the server.', 'Check your network connection and try again.');
  }
}

/** Runs `queryString` in the background: its id and status at once (the result is read later, page by page). */
export const submitQuery = (queryString: string) => request<QueryAccepted>('POST', '/query/', { body: { query_string: queryString, async: true } });

/** Your latest queries, newest first: those run in the background and every other statement of the last days. */
export const listQueries = async (limit: number) => (await request<QueryList>('GET', `/queries/?limit=${limit}`)).queries;

/** Cancels a query still running (resolving with its state), or deletes one that ended. */
export const deleteQuery = (id: string) => request<QueryInfo | undefined>('DELETE', `/queries/${segment(id)}`);

// --- answers that are not JSON ---------------------------------------------------------------

/**
 * A request whose body or answer is not JSON — a form upload, a streamed or CSV query result —
 * sent like every other (session cookie, `X-CSRF-Token` on changes, a 401 ends the session) but
 * answered with the Response as it came: the caller reads its body, and its error on a status
 * that is not ok. A network failure is an ApiError; an aborted request stays an `AbortError`.
 */
export async function send(
  method: string,
  path: string,
  init: { body?: BodyInit; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  if (method !== 'GET' && csrfToken !== null) headers['X-CSRF-Token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(BASE + path, { method, headers, credentials: 'same-origin', body: init.body, signal: init.signal });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, '08006', 'Could not reach the server.', 'Check your network connection and try again.');
  }
  if (res.status === 401) onUnauthorized?.();
  return res;
}
