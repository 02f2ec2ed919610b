import { useId } from 'react';
import type { Repo } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import type { Resource } from '../lib/useResource.ts';

/** Which repo to connect to, when the dialog was opened from the header. */
export function RepoPicker({ repos, value, onChange }: { repos: Resource<Repo[]>; value: string; onChange(name: string): void }) {
  const id = useId();
  if (repos.status === 'loading') return <p className="muted">Loading your repos…</p>;
  if (repos.status === 'error') return <ErrorMessage error={repos.error} />;
  if (repos.data.length === 0) return <p className="muted">You have no repos yet: create one with New repo, then connect to it here.</p>;
  return (
    <div className="connect-section">
      <div className="field">
        <label htmlFor={`${id}-repo`}>Repo</label>
        <select id={`${id}-repo`} value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">Choose a repo…</option>
          {repos.data.map((r) => (
            <option key={r.name} value={r.name}>
              {r.name}
            </option>
          ))}
        </select>
      </div>
      {value === '' && <p className="muted">Choose a repo to see how to connect to it.</p>}
    </div>
  );
}
