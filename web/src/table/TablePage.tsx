/**
 * `/<owner>/<repo>/<table>`: a table's columns and size, its rows in a grid that pages by keyset
 * as the person scrolls, editing for people who may write (on tables with a primary key), and
 * column operations for the owner. Every read and change is one statement through POST /query/.
 * The table's metadata follows the live schema stream: columns appear, go and change without a
 * reload; rows are not pushed (Refresh reloads them).
 */
import { useCallback, useRef } from 'react';
import { Link } from 'wouter';
import { getRepo, type Access } from '../api.ts';
import { NotFoundPage } from '../layout/NotFoundPage.tsx';
import { resourceStatus } from '../layout/ResourceStatus.tsx';
import { PageTitle } from '../lib/PageTitle.tsx';
import { useResource } from '../lib/useResource.ts';
import { useLiveSchema } from '../live/useLiveSchema.ts';
import { repoHref } from '../repos/paths.ts';
import { findTable } from './meta.ts';
import { TableView } from './TableView.tsx';
import './table.css';

export interface TablePageProps {
  owner: string;
  repo: string;
  /** The table's name, decoded from the URL. */
  table: string;
}

export function TablePage({ owner, repo, table }: TablePageProps) {
  const fullName = `${owner}/${repo}`;
  const detail = useResource(() => getRepo(owner, repo), [owner, repo]);
  const reload = detail.reload;
  const seen = useRef(false);

  const onLive = useCallback(
    (event: { repo: string; table: string | null; command: string }) => {
      if (event.repo !== fullName) return;
      // A rename or drop may name the table by another name: any ALTER or DROP is worth a look.
      if (event.table === null || event.table === table || /^(ALTER|DROP) /.test(event.command)) reload();
    },
    [fullName, table, reload],
  );
  useLiveSchema(fullName, onLive);

  const status = resourceStatus(detail, table);
  if (status !== undefined || detail.status !== 'ready') return status;
  const info = findTable(detail.data, table);
  if (!info) {
    if (!seen.current) return <NotFoundPage />;
    return (
      <div className="table-page">
        <p className="crumbs">
          <Link href={repoHref(owner, repo)}>{fullName}</Link>
        </p>
        <PageTitle title={table} />
        <p className="notice table-dropped" role="status">
          This table was dropped.
        </p>
      </div>
    );
  }
  seen.current = true;
  const permission: Access = detail.data.permission;
  return <TableView owner={owner} repo={repo} info={info} permission={permission} reloadMeta={reload} />;
}

export default TablePage;
