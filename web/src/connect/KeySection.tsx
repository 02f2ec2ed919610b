import { useEffect, useId, useRef, useState } from 'react';
import type { ApiError, KeyInfo, KeyRequest, NewKey } from '../api.ts';
import { CopyButton } from '../lib/CopyButton.tsx';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { formatDate } from '../lib/format.ts';
import { toApiError, type Resource } from '../lib/useResource.ts';
import { NewKeyForm } from './NewKeyForm.tsx';

interface Props {
  keys: Resource<KeyInfo[]>;
  /** The key created in this dialog, secret included; shown this once. */
  newKey: NewKey | null;
  /** The repo the dialog is about, if any: a new key may reach it only. */
  repo: string | undefined;
  onCreate(scope: KeyRequest): Promise<void>;
  onRevoke(id: string): Promise<void>;
}

const ACCESS: Record<KeyInfo['access'], string> = { full: 'Full', write: 'Read and write', read: 'Read only' };

/** Your API keys: create one for a repo or for all (its secret shown once), see what each reaches and until when, revoke them. */
export function KeySection({ keys, newKey, repo, onCreate, onRevoke }: Props) {
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
      </div>
      <NewKeyForm repo={repo} busy={busy} onCreate={(scope) => void run(() => onCreate(scope))} />
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
                <th scope="col">Reaches</th>
                <th scope="col">Access</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => (
                <tr key={k.id} className={k.expired ? 'key-expired' : undefined}>
                  <td>
                    <span className="key-name">{k.name || 'Unnamed'}</span>
                    <span className="mono key-prefix">{k.prefix}…</span>
                  </td>
                  <td className="key-repos">{k.repos === null ? 'Every repo' : k.repos.map((r) => <RepoName key={r} name={r} />)}</td>
                  <td>{ACCESS[k.access]}</td>
                  <td>
                    {k.expired && <span className="badge badge-expired">Expired</span>}{' '}
                    {k.expires_at ? <time dateTime={k.expires_at}>{formatDate(k.expires_at)}</time> : 'Never'}
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

/** `owner/repo`, breaking after the slash when the column is narrow rather than inside a name. */
function RepoName({ name }: { name: string }) {
  const slash = name.indexOf('/');
  return (
    <span className="mono key-repo">
      {name.slice(0, slash + 1)}
      <wbr />
      {name.slice(slash + 1)}
    </span>
  );
}
