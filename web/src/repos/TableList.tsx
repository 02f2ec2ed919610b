import { Link } from 'wouter';
import type { RepoDetail } from '../api.ts';
import { estimateText, type TableInfo } from '../table/meta.ts';
import { tableHref } from '../table/paths.ts';

/**
 * The repo's tables, each a link to its page with its estimated size, and a table of its columns
 * and their SQL types.
 */
export function TableList({ owner, repo, tables }: { owner: string; repo: string; tables: RepoDetail['tables'] }) {
  if (tables.length === 0) {
    return (
      <div className="empty">
        <p>No tables yet.</p>
        <p className="muted">Upload a file, or create one with CREATE TABLE from psql, any Postgres driver or the REST API: the Connect button has the details.</p>
      </div>
    );
  }
  const list: readonly TableInfo[] = tables;
  return (
    <ul className="table-list">
      {list.map((t) => (
        <li key={t.name} className="card">
          <table className="columns">
            <caption>
              <Link href={tableHref(owner, repo, t.name)} className="table-name table-link">
                {t.name}
              </Link>
              <span className="muted">
                {' '}
                · {t.columns.length} {t.columns.length === 1 ? 'column' : 'columns'}
                {estimateText(t.row_estimate) ? ` · ${estimateText(t.row_estimate)}` : ''}
              </span>
            </caption>
            <thead>
              <tr>
                <th scope="col">Column</th>
                <th scope="col">Type</th>
              </tr>
            </thead>
            <tbody>
              {t.columns.map((c) => (
                <tr key={c.name}>
                  <td className="mono">{c.name}</td>
                  <td className="mono type">{c.type}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </li>
      ))}
    </ul>
  );
}
