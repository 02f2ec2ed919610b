import * as Dialog from '@radix-ui/react-dialog';
import { useId } from 'react';
import { CopyButton } from '../lib/CopyButton.tsx';
import type { CellRef } from './DataGrid.tsx';
import { stringifyExactJson } from './exact-json.ts';
import { useOpener } from './focus.ts';
import { textOf } from './values.ts';

/** The whole value of one cell, as text (json indented), in a read-only text area that can be scrolled and copied. */
export function ValueDialog({ cell, onClose }: { cell: CellRef; onClose(): void }) {
  const id = useId();
  const opener = useOpener();
  const { column, row, rowNumber } = cell;
  const value = row.values[cell.index];
  const text = column.kind === 'json' && value !== null && value !== undefined ? stringifyExactJson(value, 2) : textOf(value, column.kind);
  return (
    <Dialog.Root open onOpenChange={(open) => !open && onClose()}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content
          className="dialog dialog-wide"
          aria-describedby={`${id}-type`}
          onCloseAutoFocus={(e) => {
            // Back to the cell (Radix would go to a Dialog.Trigger, and there is none).
            e.preventDefault();
            opener()?.focus();
          }}
        >
          <div className="dialog-head">
            <Dialog.Title className="dialog-title">
              {column.name}, row {rowNumber}
            </Dialog.Title>
            {text !== null && <CopyButton text={text} label="Copy value" />}
          </div>
          <p className="muted" id={`${id}-type`}>
            {column.type}
            {text === null ? ' · NULL' : ` · ${text.length.toLocaleString()} ${text.length === 1 ? 'character' : 'characters'}`}
          </p>
          {text === null ? (
            <p className="cell-null">NULL</p>
          ) : (
            <textarea className="value-full" readOnly value={text} rows={Math.min(20, Math.max(3, text.split('\n').length + 1))} aria-label={`Whole value of ${column.name} in row ${rowNumber}`} spellCheck={false} />
          )}
          <div className="form-actions form-actions-end">
            <Dialog.Close asChild>
              <button type="button" className="button">
                Close
              </button>
            </Dialog.Close>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
