/**
 * Routes of the console. /login and /signup are open; every other page needs a session and
 * sits in the Layout. The server answers index.html for any path outside /api.
 */
import { Route, Switch } from 'wouter';
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
                <Switch>
                  <Route path="/" component={RepoListPage} />
                  <Route path="/new" component={NewRepoPage} />
                  <Route path="/:owner/:repo">{({ owner, repo }) => <RepoPage key={`${owner}/${repo}`} owner={owner} repo={repo} />}</Route>
                  <Route component={NotFoundPage} />
                </Switch>
              </Layout>
            </RequireSession>
          </Route>
        </Switch>
      </SessionProvider>
    </ErrorBoundary>
  );
}
