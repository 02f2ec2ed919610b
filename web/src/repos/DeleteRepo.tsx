import * as Dialog from '@radix-ui/react-dialog';
import { useId, useState, type FormEvent } from 'react';
import type { ApiError } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { toApiError } from '../lib/useResource.ts';

/** Owner only: delete the repo, after typing its full name. */
export function DeleteRepo({ fullName, onDelete }: { fullName: string; onDelete(): Promise<void> }) {
  const id = useId();
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const matches = typed === fullName;

  function changeOpen(next: boolean) {
    setOpen(next);
    if (!next) {
      setTyped('');
      setError(null);
    }
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!matches) return;
    setBusy(true);
    setError(null);
    try {
      await onDelete();
    } catch (err) {
      setError(toApiError(err));
      setBusy(false);
    }
  }

  return (
    <section className="section danger-zone" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>Danger zone</h2>
      <div className="card card-danger">
        <p>Deleting the repo deletes all its tables and their data, for you and every collaborator. It cannot be undone.</p>
        <Dialog.Root open={open} onOpenChange={changeOpen}>
          <Dialog.Trigger asChild>
            <button type="button" className="button button-danger">
              Delete repo
            </button>
          </Dialog.Trigger>
          <Dialog.Portal>
            <Dialog.Overlay className="dialog-overlay" />
            <Dialog.Content className="dialog dialog-small">
              <Dialog.Title className="dialog-title">Delete {fullName}?</Dialog.Title>
              <Dialog.Description className="muted">This deletes the repo and every table in it, for everyone. It cannot be undone.</Dialog.Description>
              <form className="form" onSubmit={(e) => void submit(e)}>
                <ErrorMessage error={error} />
                <div className="field">
                  <label htmlFor={`${id}-confirm`}>Type {fullName} to confirm</label>
                  <input
                    id={`${id}-confirm`}
                    value={typed}
                    onChange={(e) => setTyped(e.target.value)}
                    autoComplete="off"
                    autoCapitalize="none"
                    spellCheck={false}
                  />
                </div>
                <div className="form-actions form-actions-end">
                  <Dialog.Close asChild>
                    <button type="button" className="button">
                      Cancel
                    </button>
                  </Dialog.Close>
                  <button type="submit" className="button button-danger" disabled={!matches || busy}>
                    Delete repo
                  </button>
                </div>
              </form>
            </Dialog.Content>
          </Dialog.Portal>
        </Dialog.Root>
      </div>
    </section>
  );
}
