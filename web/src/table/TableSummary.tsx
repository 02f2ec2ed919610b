import { useId, useState } from 'react';
import type { ApiError } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { toApiError } from '../lib/useResource.ts';
import { JsonNumber } from './exact-json.ts';
import { countText, estimateText, type TableInfo } from './meta.ts';
import { runQuery } from './query.ts';
import { countRows, type TableRef } from './statements.ts';

/**
 * What the table is: its estimated size (an exact count only on request: count(*) reads every
 * row) and its columns with their types.
 */
export function TableSummary({ target, info }: { target: TableRef; info: TableInfo }) {
  const id = useId();
  const [count, setCount] = useState<{ state: 'idle' } | { state: 'counting' } | { state: 'done'; text: string }>({ state: 'idle' });
  const [error, setError] = useState<ApiError | null>(null);
  const pk = info.primary_key ?? [];

  async function runCount() {
    setCount({ state: 'counting' });
    setError(null);
    try {
      const answer = await runQuery(countRows(target));
      const value = answer.rows[0]?.[0];
      setCount({ state: 'done', text: countText(value instanceof JsonNumber ? value.text : String(value)) });
    } catch (err) {
      setError(toApiError(err));
      setCount({ state: 'idle' });
    }
  }

  return (
    <section className="table-summary" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`} className="visually-hidden">
        Columns and size
      </h2>
      <div className="table-size">
        <span>{estimateText(info.row_estimate) ?? 'Row count not estimated yet'}</span>
        <button type="button" className="button button-small" onClick={() => void runCount()} disabled={count.state === 'counting'}>
          Count rows
        </button>
        <span role="status" className="table-count">
          {count.state === 'counting' ? 'Counting…' : count.state === 'done' ? `Exactly ${count.text}.` : ''}
        </span>
      </div>
      <ErrorMessage error={error} />
      <ul className="column-chips" aria-label={`Columns of ${info.name}`}>
        {info.columns.map((c) => (
          <li key={c.name} className="column-chip">
            <span className="column-chip-name">{c.name}</span> <span className="column-chip-type">{c.type}</span>
            {pk.includes(c.name) && <span className="column-chip-flag">primary key</span>}
            {c.nullable === false && !pk.includes(c.name) && <span className="column-chip-flag">not null</span>}
          </li>
        ))}
      </ul>
    </section>
  );
}
