import { useId, useState, type FormEvent } from 'react';
import type { ApiError, Repo, RepoChanges } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { toApiError } from '../lib/useResource.ts';
import { VisibilityFields } from './VisibilityFields.tsx';

/** Owner only: the description and the visibility of the repo. */
export function RepoSettings({ repo, onSave }: { repo: Repo; onSave(changes: RepoChanges): Promise<void> }) {
  const id = useId();
  const [description, setDescription] = useState(repo.description);
  const [isPrivate, setIsPrivate] = useState(repo.is_private);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      await onSave({ description, is_private: isPrivate });
      setSaved(true);
    } catch (err) {
      setError(toApiError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="section" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>Settings</h2>
      <form className="form card" onSubmit={(e) => void submit(e)}>
        <ErrorMessage error={error} />
        <div className="field">
          <label htmlFor={`${id}-description`}>Description</label>
          <textarea
            id={`${id}-description`}
            rows={3}
            maxLength={10000}
            value={description}
            onChange={(e) => {
              setDescription(e.target.value);
              setSaved(false);
            }}
          />
        </div>
        <VisibilityFields
          isPrivate={isPrivate}
          onChange={(value) => {
            setIsPrivate(value);
            setSaved(false);
          }}
        />
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            Save
          </button>
          <span role="status" className="form-status">
            {saved ? 'Saved.' : ''}
          </span>
        </div>
      </form>
    </section>
  );
}
