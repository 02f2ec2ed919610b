import { useId, useState, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import { ApiError, createRepo } from '../api.ts';
import { useUser } from '../account/session.tsx';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { PageTitle } from '../lib/PageTitle.tsx';
import { toApiError } from '../lib/useResource.ts';
import { repoHref } from './paths.ts';
import { VisibilityFields } from './VisibilityFields.tsx';

const REPO_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** `/new`: create a repo in your namespace, then go to it. */
export function NewRepoPage() {
  const user = useUser();
  const id = useId();
  const [, navigate] = useLocation();
  const [isPrivate, setIsPrivate] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const name = String(form.get('name')).trim();
    if (!REPO_NAME.test(name)) {
      setError(new ApiError(400, '42602', `"${name}" is not a valid repo name.`, 'Use 1 to 100 letters, digits, _, - and . (no spaces or slashes).'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const repo = await createRepo({ name, is_private: isPrivate, description: String(form.get('description')) });
      navigate(repoHref(repo.owner, repo.repo));
    } catch (err) {
      setError(toApiError(err));
      setBusy(false);
    }
  }

  return (
    <div className="narrow">
      <PageTitle title="New repo" />
      <p className="muted">A repo holds tables. Its full name, like {user}/sales, is also its schema in SQL.</p>
      <form className="form" onSubmit={(e) => void submit(e)}>
        <ErrorMessage error={error} />
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <div className="prefixed">
            <span className="prefix" aria-hidden="true">
              {user} /
            </span>
            <input id={`${id}-name`} name="name" required maxLength={100} autoComplete="off" spellCheck={false} aria-describedby={`${id}-name-hint`} />
          </div>
          <p className="field-hint" id={`${id}-name-hint`}>
            Letters, digits, _, - and . (up to 100).
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-description`}>Description</label>
          <textarea id={`${id}-description`} name="description" rows={3} maxLength={10000} />
        </div>
        <VisibilityFields isPrivate={isPrivate} onChange={setIsPrivate} />
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            Create repo
          </button>
        </div>
      </form>
    </div>
  );
}
