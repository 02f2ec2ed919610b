import { Link } from 'wouter';
import type { Repo } from '../api.ts';
import { accessLabel, visibilityLabel } from '../lib/format.ts';
import { repoHref } from './paths.ts';

export function RepoList({ repos }: { repos: Repo[] }) {
  if (repos.length === 0) {
    return (
      <div className="empty">
        <p>You have no repos yet, and none are shared with you.</p>
        <p className="muted">A repo holds tables. Create one, then connect to it with psql, any Postgres driver or the REST API.</p>
      </div>
    );
  }
  return (
    <ul className="repo-list">
      {repos.map((r) => (
        <li key={r.name} className="repo-row">
          <div className="repo-row-head">
            <Link href={repoHref(r.owner, r.repo)} className="repo-link">
              {r.name}
            </Link>
            <span className={r.is_private ? 'badge' : 'badge badge-public'}>{visibilityLabel(r.is_private)}</span>
            <span className="badge badge-access">{accessLabel(r.permission)}</span>
          </div>
          {r.description ? <p className="repo-description">{r.description}</p> : <p className="repo-description muted">No description</p>}
        </li>
      ))}
    </ul>
  );
}
