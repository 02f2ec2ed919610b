import { Link } from 'wouter';
import { listRepos } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { PageTitle } from '../lib/PageTitle.tsx';
import { useResource } from '../lib/useResource.ts';
import { RepoList } from './RepoList.tsx';

/** `/`: your repos and the ones shared with you. */
export function RepoListPage() {
  const repos = useResource(listRepos, []);
  return (
    <>
      <div className="page-head">
        <PageTitle title="Your repos" />
        <Link href="/new" className="button button-primary">
          New repo
        </Link>
      </div>
      {repos.status === 'loading' && (
        <p className="muted" role="status">
          Loading repos…
        </p>
      )}
      <ErrorMessage error={repos.error} />
      {repos.status === 'ready' && <RepoList repos={repos.data} />}
    </>
  );
}
