import type { Column } from './requests.ts';
import { reads, writtenNote } from './written.ts';

/** The types offered for a column (the inferred one is added when it is not among them). */
export const TYPES = ['TEXT', 'BIGINT', 'INTEGER', 'NUMERIC', 'DOUBLE PRECISION', 'BOOLEAN', 'DATE', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'JSONB', 'UUID'];

interface Props {
  /** Ids of the fields: `<idPrefix>-name-<i>` and `<idPrefix>-type-<i>` (0-based), so the page can focus one. */
  idPrefix: string;
  /** As inferred from the file. */
  inferred: Column[];
  names: string[];
  types: string[];
  /** The layout chosen for each column whose dates read both ways (`ambiguous`). */
  layouts: (string | undefined)[];
  problems: (string | null)[];
  /** Append keeps the table's own columns: nothing to edit. */
  readOnly: boolean;
  onName(index: number, name: string): void;
  onType(index: number, type: string): void;
  onLayout(index: number, layout: string): void;
}

/** `MM/DD/YYYY (month first)`. */
const layoutLabel = (layout: string) => `${layout} (${layout.startsWith('MM') ? 'month' : 'day'} first)`;

/** Each column of the file: its name and type, both changeable before the upload. */
export function ColumnsEditor({ idPrefix: id, inferred, names, types, layouts, problems, readOnly, onName, onType, onLayout }: Props) {
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
            const type = types[i] ?? column.type;
            const ambiguous = column.ambiguous ?? [];
            const layout = layouts[i] ?? ambiguous[0];
            const choosing = ambiguous.length > 0 && reads(type, ambiguous[0]!);
            const note = writtenNote(column, type, choosing ? layout : undefined);
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
                  <select
                    id={`${id}-type-${i}`}
                    value={type}
                    onChange={(e) => onType(i, e.target.value)}
                    disabled={readOnly}
                    aria-describedby={note ? `${id}-written-${i}` : undefined}
                  >
                    {options.map((t) => (
                      <option key={t} value={t}>
                        {t === column.type ? `${t} (inferred)` : t}
                      </option>
                    ))}
                  </select>
                  {choosing && (
                    <>
                      <label htmlFor={`${id}-layout-${i}`} className="visually-hidden">
                        Layout of column {n}
                      </label>
                      <select id={`${id}-layout-${i}`} className="upload-layout" value={layout} onChange={(e) => onLayout(i, e.target.value)} disabled={readOnly}>
                        {ambiguous.map((l) => (
                          <option key={l} value={l}>
                            {layoutLabel(l)}
                          </option>
                        ))}
                      </select>
                    </>
                  )}
                  {note && (
                    <p className="field-hint upload-written" id={`${id}-written-${i}`}>
                      {note}
                    </p>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
