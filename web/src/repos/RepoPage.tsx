import { useCallback } from 'react';
import { Link, useLocation } from 'wouter';
import { deleteRepo, getRepo, listCollaborators, removeCollaborator, setCollaborator, updateRepo } from '../api.ts';
import { resourceStatus } from '../layout/ResourceStatus.tsx';
import { useResource } from '../lib/useResource.ts';
import { useLiveSchema } from '../live/useLiveSchema.ts';
import { uploadHref } from '../table/paths.ts';
import { Collaborators } from './Collaborators.tsx';
import { DeleteRepo } from './DeleteRepo.tsx';
import { RepoSettings } from './RepoSettings.tsx';
import { RepoSummary } from './RepoSummary.tsx';
import { TableList } from './TableList.tsx';

/**
 * `/<owner>/<repo>`: what the repo holds, and for its owner the settings, the collaborators and
 * deletion. A missing repo and someone else's private repo both answer 404: one Not found page.
 */
export function RepoPage({ owner, repo }: { owner: string; repo: string }) {
  const [, navigate] = useLocation();
  const detail = useResource(() => getRepo(owner, repo), [owner, repo]);
  const isOwner = detail.data?.permission === 'own';
  const collaborators = useResource(() => (isOwner ? listCollaborators(owner, repo) : Promise.resolve([])), [owner, repo, isOwner]);
  // Tables created, changed or dropped anywhere (psql, an upload, another tab) show up here.
  const reload = detail.reload;
  useLiveSchema(`${owner}/${repo}`, useCallback(() => reload(), [reload]));

  const status = resourceStatus(detail, `${owner}/${repo}`);
  if (status !== undefined || detail.status !== 'ready') return status;

  const data = detail.data;
  return (
    <>
      <RepoSummary repo={data} />
      <section className="section" aria-labelledby="tables-heading">
        <div className="section-head">
          <h2 id="tables-heading" style={{ marginBottom: 0 }}>
            Tables
          </h2>
          {(data.permission === 'own' || data.permission === 'write') && (
            <Link href={uploadHref(owner, repo)} className="button button-small">
              Upload
            </Link>
          )}
        </div>
        <TableList owner={owner} repo={repo} tables={data.tables} />
      </section>
      {isOwner && (
        <>
          <RepoSettings
            repo={data}
            onSave={async (changes) => {
              await updateRepo(owner, repo, changes);
              detail.reload();
            }}
          />
          <Collaborators
            collaborators={collaborators}
            onAdd={async (user, permission) => {
              await setCollaborator(owner, repo, user, permission);
              collaborators.reload();
            }}
            onRemove={async (user) => {
              await removeCollaborator(owner, repo, user);
              collaborators.reload();
            }}
          />
          <DeleteRepo
            fullName={data.name}
            onDelete={async () => {
              await deleteRepo(owner, repo);
              navigate('/', { replace: true });
            }}
          />
        </>
      )}
    </>
  );
}
