import type { Column } from './requests.ts';

/** The types offered for a column (the inferred one is added when it is not among them). */
export const TYPES = ['TEXT', 'BIGINT', 'INTEGER', 'NUMERIC', 'DOUBLE PRECISION', 'BOOLEAN', 'DATE', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'JSONB', 'UUID'];

interface Props {
  /** Ids of the fields: `<idPrefix>-name-<i>` and `<idPrefix>-type-<i>` (0-based), so the page can focus one. */
  idPrefix: string;
  /** As inferred from the file. */
  inferred: Column[];
  names: string[];
  types: string[];
  problems: (string | null)[];
  /** Append keeps the table's own columns: nothing to edit. */
  readOnly: boolean;
  onName(index: number, name: string): void;
  onType(index: number, type: string): void;
}

/** Each column of the file: its name and type, both changeable before the upload. */
export function ColumnsEditor({ idPrefix: id, inferred, names, types, problems, readOnly, onName, onType }: Props) {
  return (
    <div className="upload-columns-scroll">
      <table className="upload-columns">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
          </tr>
        </thead>
        <tbody>
          {inferred.map((column, i) => {
            const n = i + 1;
            const problem = problems[i] ?? null;
            const options = TYPES.includes(column.type) ? TYPES : [column.type, ...TYPES];
            return (
              <tr key={i}>
                <td className="upload-column-number">{n}</td>
                <td>
                  <label htmlFor={`${id}-name-${i}`} className="visually-hidden">
                    Name of column {n}
                  </label>
                  <input
                    id={`${id}-name-${i}`}
                    value={names[i] ?? ''}
                    onChange={(e) => onName(i, e.target.value)}
                    readOnly={readOnly}
                    autoComplete="off"
                    spellCheck={false}
                    aria-invalid={problem ? true : undefined}
                    aria-describedby={problem ? `${id}-problem-${i}` : undefined}
                  />
                  {problem && (
                    <p className="field-error" id={`${id}-problem-${i}`}>
                      {problem}
                    </p>
                  )}
                </td>
                <td>
                  <label htmlFor={`${id}-type-${i}`} className="visually-hidden">
                    Type of column {n}
                  </label>
                  <select id={`${id}-type-${i}`} value={types[i] ?? column.type} onChange={(e) => onType(i, e.target.value)} disabled={readOnly}>
                    {options.map((t) => (
                      <option key={t} value={t}>
                        {t === column.type ? `${t} (inferred)` : t}
                      </option>
                    ))}
                  </select>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
