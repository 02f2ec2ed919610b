/**
 * Routes of the console. /login and /signup are open; every other page needs a session and
 * sits in the Layout. The server answers index.html for any path outside /api.
 */
import { lazy, Suspense } from 'react';
import { Route, Switch } from 'wouter';
import { AccountPage } from './account/AccountPage.tsx';
import { LoginPage } from './account/LoginPage.tsx';
import { RequireSession } from './account/RequireSession.tsx';
import { SessionProvider } from './account/session.tsx';
import { SignupPage } from './account/SignupPage.tsx';
import { Layout } from './layout/Layout.tsx';
import { NotFoundPage } from './layout/NotFoundPage.tsx';
import { ErrorBoundary } from './lib/ErrorBoundary.tsx';
import { NewRepoPage } from './repos/NewRepoPage.tsx';
import { RepoListPage } from './repos/RepoListPage.tsx';
import { RepoPage } from './repos/RepoPage.tsx';

// Pages with heavy parts (CodeMirror, the data grid) load on their own, not with the first page.
const SqlEditorPage = lazy(() => import('./sql/SqlEditorPage.tsx'));
const TablePage = lazy(() => import('./table/TablePage.tsx'));
const UploadPage = lazy(() => import('./upload/UploadPage.tsx'));

/**
 * Path segment `i` (1-based) of the address, decoded exactly once. The router decodes the path
 * with decodeURI, which leaves `%2F` and friends alone but turns `%25` into `%`; a table named
 * `a%2Fb` must not become `a/b`, so names are read from the raw path instead.
 */
function segment(i: number): string {
  const raw = window.location.pathname.split('/')[i] ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export function App() {
  return (
    <ErrorBoundary>
      <SessionProvider>
        <Switch>
          <Route path="/login" component={LoginPage} />
          <Route path="/signup" component={SignupPage} />
          <Route>
            <RequireSession>
              <Layout>
                <Suspense fallback={<p className="muted">Loading…</p>}>
                  <Switch>
                    <Route path="/" component={RepoListPage} />
                    <Route path="/new" component={NewRepoPage} />
                    <Route path="/account" component={AccountPage} />
                    <Route path="/sql" component={SqlEditorPage} />
                    <Route path="/:owner/:repo">{({ owner, repo }) => <RepoPage key={`${owner}/${repo}`} owner={owner} repo={repo} />}</Route>
                    <Route path="/:owner/:repo/-/upload">{({ owner, repo }) => <UploadPage key={`${owner}/${repo}`} owner={segment(1)} repo={segment(2)} />}</Route>
                    <Route path="/:owner/:repo/:table">
                      {({ owner, repo, table }) => <TablePage key={`${owner}/${repo}/${table}`} owner={segment(1)} repo={segment(2)} table={segment(3)} />}
                    </Route>
                    <Route component={NotFoundPage} />
                  </Switch>
                </Suspense>
              </Layout>
            </RequireSession>
          </Route>
        </Switch>
      </SessionProvider>
    </ErrorBoundary>
  );
}
