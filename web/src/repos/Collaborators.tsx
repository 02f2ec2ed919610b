import { useId, useRef, useState, type FormEvent } from 'react';
import type { ApiError, Collaborator, Permission } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { accessLabel } from '../lib/format.ts';
import { toApiError, type Resource } from '../lib/useResource.ts';

interface Props {
  collaborators: Resource<Collaborator[]>;
  onAdd(user: string, permission: Permission): Promise<void>;
  onRemove(user: string): Promise<void>;
}

/** Owner only: who else may read or write the repo. */
export function Collaborators({ collaborators, onAdd, onRemove }: Props) {
  const id = useId();
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);

  async function run(action: () => Promise<void>): Promise<boolean> {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (err) {
      setError(toApiError(err));
      return false;
    } finally {
      setBusy(false);
    }
  }

  async function add(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const user = String(form.get('user')).trim().toLowerCase();
    const permission = form.get('permission') === 'write' ? 'write' : 'read';
    if (await run(() => onAdd(user, permission))) formElement.reset();
  }

  return (
    <section className="section" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`} ref={heading} tabIndex={-1}>
        Collaborators
      </h2>
      <div className="card">
        <ErrorMessage error={error ?? collaborators.error} />
        {collaborators.status === 'loading' && (
          <p className="muted" role="status">
            Loading collaborators…
          </p>
        )}
        {collaborators.status === 'ready' &&
          (collaborators.data.length === 0 ? (
            <p className="muted">Nobody else has access yet. Add a user below to share this repo.</p>
          ) : (
            <ul className="collaborator-list">
              {collaborators.data.map((c) => (
                <li key={c.user} className="collaborator">
                  <span className="collaborator-name">{c.user}</span>
                  <span className="badge badge-access">{accessLabel(c.permission)}</span>
                  <button type="button" className="button button-small button-danger-quiet" aria-label={`Remove ${c.user}`} disabled={busy} onClick={() => void run(() => onRemove(c.user)).then((ok) => ok && heading.current?.focus())}>
                    Remove
                  </button>
                </li>
              ))}
            </ul>
          ))}
        <form className="inline-form" onSubmit={(e) => void add(e)}>
          <div className="field">
            <label htmlFor={`${id}-user`}>User name</label>
            <input id={`${id}-user`} name="user" required autoComplete="off" autoCapitalize="none" spellCheck={false} />
          </div>
          <div className="field">
            <label htmlFor={`${id}-permission`}>Permission</label>
            <select id={`${id}-permission`} name="permission" defaultValue="read">
              <option value="read">Can read</option>
              <option value="write">Can write</option>
            </select>
          </div>
          <button type="submit" className="button" disabled={busy}>
            Add collaborator
          </button>
        </form>
        <p className="field-hint">Adding someone who is already a collaborator changes their permission.</p>
      </div>
    </section>
  );
}
