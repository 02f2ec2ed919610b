import * as Dialog from '@radix-ui/react-dialog';
import { useState, type FormEvent, type ReactNode } from 'react';
import { focusable, useOpener } from './focus.ts';
import type { ApiError } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { toApiError } from '../lib/useResource.ts';

interface ActionDialogProps {
  title: string;
  description?: ReactNode;
  /** The exact statement the button runs, shown as the person types; null while it is incomplete. */
  sql: string | null;
  submitLabel: string;
  danger?: boolean;
  canSubmit: boolean;
  /** Runs the statement; a failure stays in the dialog, with nothing changed. */
  onSubmit(): Promise<void>;
  onClose(): void;
  /** Where focus goes when the dialog closes, rather than back to what opened it (e.g. when that is gone). */
  returnFocus?: () => HTMLElement | null;
  /** Where focus goes when neither can take it (e.g. `Delete rows`, disabled once they are gone). */
  fallbackFocus?: () => HTMLElement | null;
  wide?: boolean;
  children?: ReactNode;
}

/**
 * A dialog that runs one statement: its fields, the statement itself (always the one that
 * runs), and Postgres' error in words when it fails. Mounted when opened, so every opening
 * starts clean.
 */
export function ActionDialog({ title, description, sql, submitLabel, danger, canSubmit, onSubmit, onClose, returnFocus, fallbackFocus, wide, children }: ActionDialogProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const opener = useOpener();

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!canSubmit || busy) return;
    setBusy(true);
    setError(null);
    try {
      await onSubmit();
    } catch (err) {
      setError(toApiError(err));
      setBusy(false);
    }
  }

  return (
    <Dialog.Root open onOpenChange={(open) => !open && !busy && onClose()}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content
          className={wide ? 'dialog dialog-wide' : 'dialog dialog-medium'}
          {...(description ? {} : { 'aria-describedby': undefined })}
          onCloseAutoFocus={(e) => {
            // Without a Dialog.Trigger, Radix would leave focus on the page's body.
            e.preventDefault();
            const target = returnFocus?.();
            (focusable(target) ? target : (opener() ?? fallbackFocus?.()))?.focus();
          }}
        >
          <Dialog.Title className="dialog-title">{title}</Dialog.Title>
          {description && <Dialog.Description className="muted dialog-description">{description}</Dialog.Description>}
          <form className="form dialog-form" onSubmit={(e) => void submit(e)}>
            {children}
            <SqlPreview sql={sql} />
            <ErrorMessage error={error} />
            <div className="form-actions form-actions-end">
              <Dialog.Close asChild>
                <button type="button" className="button" disabled={busy}>
                  Cancel
                </button>
              </Dialog.Close>
              <button type="submit" className={danger ? 'button button-danger' : 'button button-primary'} disabled={!canSubmit || busy}>
                {submitLabel}
              </button>
            </div>
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/** The statement a dialog will run, as text. */
export function SqlPreview({ sql }: { sql: string | null }) {
  return (
    <div className="sql-preview">
      <p className="sql-preview-label">SQL that will run</p>
      {sql === null ? <p className="muted sql-preview-empty">Fill in the fields to see it.</p> : <pre className="code">{sql}</pre>}
    </div>
  );
}
