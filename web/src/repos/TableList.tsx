import type { RepoDetail } from '../api.ts';

type Table = RepoDetail['tables'][number];

/** The repo's tables, each as a table of its columns and their SQL types. */
export function TableList({ tables }: { tables: Table[] }) {
  if (tables.length === 0) {
    return (
      <div className="empty">
        <p>No tables yet.</p>
        <p className="muted">Create one with CREATE TABLE from psql, any Postgres driver or the REST API: the Connect button has the details.</p>
      </div>
    );
  }
  return (
    <ul className="table-list">
      {tables.map((t) => (
        <li key={t.name} className="card">
          <table className="columns">
            <caption>
              <span className="table-name">{t.name}</span>
              <span className="muted">
                {' '}
                · {t.columns.length} {t.columns.length === 1 ? 'column' : 'columns'}
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
