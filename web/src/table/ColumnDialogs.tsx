/**
 * The owner's column operations, each one statement shown as it will run: add, rename and delete
 * a column (changing a type has its own file: it checks the values first).
 */
import { useId, useState } from 'react';
import { ActionDialog } from './ActionDialog.tsx';
import { runQuery } from './query.ts';
import { addColumn, dropColumn, renameColumn, type TableRef } from './statements.ts';
import { TypeField } from './TypeField.tsx';

export interface ColumnDialogProps {
  target: TableRef;
  /** Called after the statement succeeded, with what to tell the person. */
  onDone(message: string): void;
  onClose(): void;
  returnFocus?: () => HTMLElement | null;
  fallbackFocus?: () => HTMLElement | null;
}

export function AddColumnDialog({ target, onDone, onClose, returnFocus, fallbackFocus }: ColumnDialogProps) {
  const id = useId();
  const [name, setName] = useState('');
  const [type, setType] = useState('text');
  const [defaultExpr, setDefaultExpr] = useState('');
  const ready = name.trim() !== '' && type.trim() !== '';
  const sql = ready ? addColumn(target, name, type, defaultExpr) : null;
  return (
    <ActionDialog
      title="Add column"
      description={`A new column at the end of ${target.table}.`}
      sql={sql}
      submitLabel="Add column"
      canSubmit={sql !== null}
      onClose={onClose}
      returnFocus={returnFocus}
      fallbackFocus={fallbackFocus}
      onSubmit={async () => {
        if (sql === null) return;
        await runQuery(sql);
        onDone(`Added column ${name}.`);
      }}
    >
      <div className="field">
        <label htmlFor={`${id}-name`}>Column name</label>
        <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} required autoComplete="off" spellCheck={false} />
      </div>
      <TypeField initial="text" onChange={setType} />
      <div className="field">
        <label htmlFor={`${id}-default`}>Default</label>
        <input id={`${id}-default`} value={defaultExpr} onChange={(e) => setDefaultExpr(e.target.value)} autoComplete="off" spellCheck={false} aria-describedby={`${id}-default-hint`} />
        <p className="field-hint" id={`${id}-default-hint`}>
          Optional. An SQL expression, e.g. 0, 'none' or now(); existing rows get it too. Empty: NULL.
        </p>
      </div>
    </ActionDialog>
  );
}

export function RenameColumnDialog({ target, column, onDone, onClose, returnFocus, fallbackFocus }: ColumnDialogProps & { column: string }) {
  const id = useId();
  const [name, setName] = useState(column);
  const ready = name.trim() !== '' && name !== column;
  const sql = ready ? renameColumn(target, column, name) : null;
  return (
    <ActionDialog
      title={`Rename column ${column}`}
      sql={sql}
      submitLabel="Rename column"
      canSubmit={sql !== null}
      onClose={onClose}
      returnFocus={returnFocus}
      fallbackFocus={fallbackFocus}
      onSubmit={async () => {
        if (sql === null) return;
        await runQuery(sql);
        onDone(`Renamed column ${column} to ${name}.`);
      }}
    >
      <div className="field">
        <label htmlFor={`${id}-name`}>New name</label>
        <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} required autoComplete="off" spellCheck={false} />
      </div>
    </ActionDialog>
  );
}

export function DeleteColumnDialog({ target, column, onDone, onClose, returnFocus, fallbackFocus }: ColumnDialogProps & { column: string }) {
  const sql = dropColumn(target, column);
  return (
    <ActionDialog
      title={`Delete column ${column}?`}
      description={`Its values are deleted from every row of ${target.table}, for everyone. This cannot be undone.`}
      sql={sql}
      submitLabel="Delete column"
      danger
      canSubmit
      onClose={onClose}
      returnFocus={returnFocus}
      fallbackFocus={fallbackFocus}
      onSubmit={async () => {
        await runQuery(sql);
        onDone(`Deleted column ${column}.`);
      }}
    />
  );
}
