import { useEffect, useId, useRef, useState } from 'react';
import type { ApiError, KeyInfo, NewKey } from '../api.ts';
import { CopyButton } from '../lib/CopyButton.tsx';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { formatDate } from '../lib/format.ts';
import { toApiError, type Resource } from '../lib/useResource.ts';

interface Props {
  keys: Resource<KeyInfo[]>;
  /** The key created in this dialog, secret included; shown this once. */
  newKey: NewKey | null;
  onCreate(): Promise<void>;
  onRevoke(id: string): Promise<void>;
}

/** Your API keys: create one (its secret shown once), see them all, revoke them. */
export function KeySection({ keys, newKey, onCreate, onRevoke }: Props) {
  const id = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const secret = useRef<HTMLInputElement>(null);

  // A new secret takes the focus, selected, ready to copy.
  useEffect(() => {
    if (newKey) {
      secret.current?.focus();
      secret.current?.select();
    }
  }, [newKey]);

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

  return (
    <section className="connect-section" aria-labelledby={`${id}-heading`}>
      <div className="section-head">
        <h3 id={`${id}-heading`} ref={heading} tabIndex={-1}>
          API keys
        </h3>
        <button type="button" className="button button-primary button-small" disabled={busy} onClick={() => void run(onCreate)}>
          Create key
        </button>
      </div>
      <ErrorMessage error={error ?? keys.error} />
      {newKey && (
        <div className="new-key">
          <div className="new-key-row">
            <input ref={secret} className="mono new-key-value" readOnly value={newKey.key} aria-label="API key" aria-describedby={`${id}-once`} spellCheck={false} />
            <CopyButton text={newKey.key} label="Copy key" />
          </div>
          <p className="new-key-note" id={`${id}-once`}>
            This key is shown only once: copy it now and keep it somewhere safe. The snippets below already contain it.
          </p>
        </div>
      )}
      {keys.status === 'loading' && <p className="muted">Loading keys…</p>}
      {keys.status === 'ready' &&
        (keys.data.length === 0 ? (
          <p className="muted">You have no API keys yet. Create one to connect.</p>
        ) : (
          <table className="key-table">
            <caption className="visually-hidden">Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => (
                <tr key={k.id}>
                  <td className="mono">{k.prefix}…</td>
                  <td>
                    <time dateTime={k.created_at}>{formatDate(k.created_at)}</time>
                  </td>
                  <td>{k.last_used_at ? <time dateTime={k.last_used_at}>{formatDate(k.last_used_at)}</time> : 'never'}</td>
                  <td className="cell-action">
                    <button
                      type="button"
                      className="button button-small button-danger-quiet"
                      aria-label={`Revoke ${k.prefix}`}
                      disabled={busy}
                      onClick={() => void run(() => onRevoke(k.id)).then((ok) => ok && heading.current?.focus())}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
    </section>
  );
}
