import { useId, useState, type FormEvent } from 'react';
import type { KeyRequest } from '../api.ts';

/** Expiries offered, in days from now (0: never). */
const EXPIRIES: ReadonlyArray<[days: number, label: string]> = [
  [0, 'Never'],
  [1, 'In 1 day'],
  [7, 'In 7 days'],
  [30, 'In 30 days'],
  [90, 'In 90 days'],
  [365, 'In 1 year'],
];

interface Props {
  /** The repo the dialog is about (`alice/sales`), if any: a key can then reach it only. */
  repo: string | undefined;
  busy: boolean;
  onCreate(scope: KeyRequest): void;
}

/**
 * What a new key reaches: with a repo at hand, that repo only (read, or read and write) or every
 * repo (a full key, which also manages the account); a name, and an optional expiry.
 */
export function NewKeyForm({ repo, busy, onCreate }: Props) {
  const id = useId();
  const [name, setName] = useState('');
  const [onlyRepo, setOnlyRepo] = useState(true);
  const [write, setWrite] = useState(true);
  const [days, setDays] = useState(0);
  const scoped = repo !== undefined && onlyRepo;

  function submit(event: FormEvent) {
    event.preventDefault();
    const scope: KeyRequest = { name: name.trim() };
    if (scoped) Object.assign(scope, { repos: [repo], access: write ? 'write' : 'read' });
    if (days > 0) scope.expires_at = new Date(Date.now() + days * 86_400_000).toISOString();
    onCreate(scope);
  }

  return (
    <form className="new-key-form" onSubmit={submit} aria-label="New API key">
      <div className="field">
        <label htmlFor={`${id}-name`}>Key name</label>
        <input id={`${id}-name`} value={name} maxLength={100} placeholder="e.g. dashboard" onChange={(e) => setName(e.target.value)} aria-describedby={`${id}-name-hint`} />
        <p className="field-hint" id={`${id}-name-hint`}>
          What it is for, so that you know which key to revoke.
        </p>
      </div>
      {repo !== undefined && (
        <fieldset className="field choices">
          <legend>Reaches</legend>
          <div className="choice">
            <input type="radio" id={`${id}-repo`} name={`${id}-reach`} checked={onlyRepo} onChange={() => setOnlyRepo(true)} aria-describedby={`${id}-repo-hint`} />
            <label htmlFor={`${id}-repo`}>
              This repo only: <span className="mono">{repo}</span>
            </label>
            <p className="field-hint" id={`${id}-repo-hint`}>
              A key for this repo only: it cannot see your other repos, make keys or repos, or share.
            </p>
          </div>
          <div className="choice">
            <input type="radio" id={`${id}-all`} name={`${id}-reach`} checked={!onlyRepo} onChange={() => setOnlyRepo(false)} aria-describedby={`${id}-all-hint`} />
            <label htmlFor={`${id}-all`}>Every repo (full key)</label>
            <p className="field-hint" id={`${id}-all-hint`}>
              Everything you can do: all your repos, keys and sharing.
            </p>
          </div>
        </fieldset>
      )}
      {scoped && (
        <fieldset className="field choices">
          <legend>Access</legend>
          <div className="choice">
            <input type="radio" id={`${id}-write`} name={`${id}-access`} checked={write} onChange={() => setWrite(true)} aria-describedby={`${id}-write-hint`} />
            <label htmlFor={`${id}-write`}>Read and write</label>
            <p className="field-hint" id={`${id}-write-hint`}>
              Reads, changes rows and tables of the repo.
            </p>
          </div>
          <div className="choice">
            <input type="radio" id={`${id}-read`} name={`${id}-access`} checked={!write} onChange={() => setWrite(false)} aria-describedby={`${id}-read-hint`} />
            <label htmlFor={`${id}-read`}>Read only</label>
            <p className="field-hint" id={`${id}-read-hint`}>
              For dashboards and reports: reads, and nothing else.
            </p>
          </div>
        </fieldset>
      )}
      <div className="field">
        <label htmlFor={`${id}-expires`}>Expires</label>
        <select id={`${id}-expires`} value={days} onChange={(e) => setDays(Number(e.target.value))}>
          {EXPIRIES.map(([d, label]) => (
            <option key={d} value={d}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div className="form-actions">
        <button type="submit" className="button button-primary button-small" disabled={busy}>
          Create key
        </button>
      </div>
    </form>
  );
}
