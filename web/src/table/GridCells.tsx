import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import type { ApiError } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import type { GridColumn } from './useRows.ts';

/** Characters of a value put in a cell; the whole value is one keystroke away (the value dialog). */
const SHOWN_CHARS = 300;

/** A value in a cell: NULL muted and in italics, text as text (cut when long). */
export function CellValue({ text }: { text: string | null }) {
  if (text === null) return <span className="cell-null">NULL</span>;
  return <span className="cell-text">{text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text}</span>;
}

/** Whether a value does not fit its cell, judged from its length and the column's width. */
export function isCut(text: string | null, column: GridColumn, width: number): boolean {
  if (text === null) return false;
  if (text.includes('\n') || column.kind === 'json') return text.length > 2;
  return text.length > Math.floor((width - 40) / 7.5);
}

interface EditorProps {
  column: GridColumn;
  rowNumber: number;
  /** The value's text form; null for NULL. */
  initial: string | null;
  nullable: boolean;
  /** Runs the UPDATE; its error, or null when saved. */
  onSave(text: string | null): Promise<ApiError | null>;
  /** `refocus`: put focus back on the cell (Escape), rather than leave it where it went (a click elsewhere). */
  onCancel(refocus: boolean): void;
}

/**
 * The editor of one cell, over the cell: Enter saves, Escape (or leaving it) cancels. Long and
 * multi-line values get a text area, where Shift+Enter starts a new line. NULL is a checkbox, so
 * that an empty value stays the empty string.
 */
export function CellEditor({ column, rowNumber, initial, nullable, onSave, onCancel }: EditorProps) {
  const id = useId();
  const [draft, setDraft] = useState(initial ?? '');
  const [isNull, setIsNull] = useState(initial === null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [multiline] = useState(() => column.kind === 'json' || (initial ?? '').includes('\n') || (initial ?? '').length > 60);
  const field = useRef<HTMLInputElement & HTMLTextAreaElement>(null);

  useEffect(() => {
    field.current?.focus();
    field.current?.select();
  }, []);

  async function save() {
    if (busy) return;
    setBusy(true);
    setError(null);
    const failure = await onSave(isNull ? null : draft);
    if (failure) {
      setError(failure);
      setBusy(false);
      field.current?.focus();
    }
  }

  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    // The grid's own keys (arrows, Enter) must not act while editing.
    event.stopPropagation();
    if (event.key === 'Escape') {
      event.preventDefault();
      if (!busy) onCancel(true);
    } else if (event.key === 'Enter' && !event.shiftKey && !event.altKey) {
      event.preventDefault();
      void save();
    }
  }

  const label = `Value of ${column.name} in row ${rowNumber}`;
  const common = {
    ref: field,
    id: `${id}-value`,
    'aria-label': label,
    'aria-describedby': `${id}-hint`,
    value: draft,
    readOnly: busy,
    spellCheck: false,
    onChange: (e: { target: { value: string } }) => {
      setDraft(e.target.value);
      setIsNull(false);
    },
  };
  return (
    <div
      className="cell-editor"
      role="group"
      aria-label={`Edit ${column.name} in row ${rowNumber}`}
      onKeyDown={onKeyDown}
      onDoubleClick={(e) => e.stopPropagation()}
      onBlur={(e) => {
        if (!busy && !e.currentTarget.contains(e.relatedTarget as Node | null)) onCancel(false);
      }}
    >
      {multiline ? <textarea {...common} rows={Math.min(12, Math.max(3, draft.split('\n').length))} /> : <input {...common} autoComplete="off" />}
      <div className="cell-editor-foot">
        {nullable && (
          <label className="cell-editor-null">
            <input type="checkbox" checked={isNull} disabled={busy} onChange={(e) => setIsNull(e.target.checked)} />
            NULL
          </label>
        )}
        <span className="cell-editor-hint" id={`${id}-hint`}>
          {busy ? 'Saving…' : multiline ? 'Enter saves · Shift+Enter new line · Esc cancels' : 'Enter saves · Esc cancels'}
        </span>
      </div>
      <ErrorMessage error={error} />
    </div>
  );
}
