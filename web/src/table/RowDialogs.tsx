/** Adding a row (a field per column) and deleting the selected rows: one statement each. */
import { useId, useState } from 'react';
import { ActionDialog } from './ActionDialog.tsx';
import type { ColumnInfo } from './meta.ts';
import { runQuery, type Row } from './query.ts';
import { deleteRows, insertRow, type TableRef } from './statements.ts';
import { literalOfText } from './values.ts';

function defaultHint(c: ColumnInfo): string {
  if (c.default) return `empty: its default, ${c.default}`;
  if (c.nullable === false) return 'required';
  return 'empty: NULL';
}

/** `Add row`: a field per column, labelled by its name; an empty field takes the column's DEFAULT. */
export function AddRowDialog({ target, columns, onAdded, onClose }: { target: TableRef; columns: ColumnInfo[]; onAdded(row: Row | undefined): void; onClose(): void }) {
  const id = useId();
  const [values, setValues] = useState<Record<string, string>>({});
  const given = columns.filter((c) => (values[c.name] ?? '') !== '').map((c) => ({ column: c.name, value: literalOfText(values[c.name] ?? '') }));
  const sql = insertRow(target, given);
  return (
    <ActionDialog
      title={`Add a row to ${target.table}`}
      description="Leave a field empty to use the column's default."
      sql={sql}
      submitLabel="Add row"
      canSubmit
      wide
      onClose={onClose}
      onSubmit={async () => {
        const answer = await runQuery(sql);
        onAdded(answer.rows[0]);
      }}
    >
      <div className="row-fields">
        {columns.map((c, i) => (
          <div className="field" key={c.name}>
            <label htmlFor={`${id}-${i}`}>{c.name}</label>
            <input
              id={`${id}-${i}`}
              value={values[c.name] ?? ''}
              onChange={(e) => setValues((v) => ({ ...v, [c.name]: e.target.value }))}
              autoComplete="off"
              spellCheck={false}
              aria-describedby={`${id}-${i}-hint`}
            />
            <p className="field-hint" id={`${id}-${i}-hint`}>
              <span className="mono">{c.type}</span> · {defaultHint(c)}
            </p>
          </div>
        ))}
      </div>
    </ActionDialog>
  );
}

/** `Delete rows`: the selected rows, by their primary key, after a confirmation. */
export function DeleteRowsDialog({
  target,
  pk,
  keys,
  onDeleted,
  onClose,
  fallbackFocus,
}: {
  target: TableRef;
  pk: string[];
  /** Key literals of each selected row. */
  keys: string[][];
  onDeleted(count: number | null): void;
  onClose(): void;
  fallbackFocus(): HTMLElement | null;
}) {
  const sql = deleteRows(target, pk, keys);
  const n = keys.length;
  return (
    <ActionDialog
      title={`Delete ${n} ${n === 1 ? 'row' : 'rows'}?`}
      description={`${n === 1 ? 'It is' : 'They are'} deleted from ${target.table} for everyone. This cannot be undone.`}
      sql={sql}
      submitLabel="Delete rows"
      danger
      canSubmit={n > 0}
      onClose={onClose}
      fallbackFocus={fallbackFocus}
      onSubmit={async () => {
        const answer = await runQuery(sql);
        onDeleted(answer.rowCount);
      }}
    />
  );
}
