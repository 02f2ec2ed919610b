import type { RepoDetail } from '../api.ts';
import { ConnectButton } from '../connect/ConnectButton.tsx';
import { accessLabel, formatDate, visibilityLabel } from '../lib/format.ts';
import { PageTitle } from '../lib/PageTitle.tsx';

/** The top of a repo's page: its full name, description, visibility, your access, Connect. */
export function RepoSummary({ repo }: { repo: RepoDetail }) {
  return (
    <div className="repo-summary">
      <div className="page-head">
        <PageTitle title={repo.name} />
        <ConnectButton repo={{ owner: repo.owner, repo: repo.repo, tables: repo.tables.map((t) => t.name) }} primary />
      </div>
      {repo.description ? <p className="repo-description-full">{repo.description}</p> : <p className="muted">No description.</p>}
      <dl className="facts">
        <div>
          <dt>Visibility</dt>
          <dd>{visibilityLabel(repo.is_private)}</dd>
        </div>
        <div>
          <dt>Your access</dt>
          <dd>{accessLabel(repo.permission)}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <time dateTime={repo.created_at}>{formatDate(repo.created_at)}</time>
          </dd>
        </div>
      </dl>
    </div>
  );
}
