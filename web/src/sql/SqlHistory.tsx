import { useId } from 'react';

interface Props {
  statements: readonly string[];
  onPick(statement: string): void;
  onClear(): void;
}

/** The person's last statements on this browser; picking one puts it back in the editor. */
export function SqlHistory({ statements, onPick, onClear }: Props) {
  const id = useId();
  return (
    <section className="sql-history" aria-labelledby={`${id}-heading`}>
      <div className="sql-history-head">
        <h2 id={`${id}-heading`}>History</h2>
        {statements.length > 0 && (
          <button type="button" className="button button-small button-quiet" onClick={onClear}>
            Clear history
          </button>
        )}
      </div>
      {statements.length === 0 ? (
        <p className="muted sql-history-empty">Statements you run appear here (on this browser only).</p>
      ) : (
        <ol className="sql-history-list">
          {statements.map((s, i) => (
            <li key={`${i}:${s}`}>
              <button type="button" className="sql-history-item" title={s} onClick={() => onPick(s)}>
                {s}
              </button>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
