import { useId, useState, type FormEvent } from 'react';
import type { ApiError } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { toApiError } from '../lib/useResource.ts';

interface Props {
  submitLabel: string;
  /** `new-password` on sign-up, so password managers offer to generate one. */
  passwordAutoComplete: 'current-password' | 'new-password';
  usernameHint?: string;
  passwordHint?: string;
  onSubmit(credentials: { username: string; password: string }): Promise<unknown>;
}

/** User name and password, as on the log-in and sign-up pages. */
export function CredentialsForm({ submitLabel, passwordAutoComplete, usernameHint, passwordHint, onSubmit }: Props) {
  const id = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(null);
    try {
      await onSubmit({ username: String(form.get('username')).trim(), password: String(form.get('password')) });
    } catch (err) {
      setError(toApiError(err));
      setBusy(false);
    }
  }

  return (
    <form className="form" onSubmit={(e) => void submit(e)}>
      <ErrorMessage error={error} />
      <div className="field">
        <label htmlFor={`${id}-username`}>Username</label>
        <input
          id={`${id}-username`}
          name="username"
          autoComplete="username"
          autoCapitalize="none"
          spellCheck={false}
          required
          aria-describedby={usernameHint ? `${id}-username-hint` : undefined}
        />
        {usernameHint && (
          <p className="field-hint" id={`${id}-username-hint`}>
            {usernameHint}
          </p>
        )}
      </div>
      <div className="field">
        <label htmlFor={`${id}-password`}>Password</label>
        <input
          id={`${id}-password`}
          name="password"
          type="password"
          autoComplete={passwordAutoComplete}
          required
          minLength={passwordAutoComplete === 'new-password' ? 10 : undefined}
          aria-describedby={passwordHint ? `${id}-password-hint` : undefined}
        />
        {passwordHint && (
          <p className="field-hint" id={`${id}-password-hint`}>
            {passwordHint}
          </p>
        )}
      </div>
      <button type="submit" className="button button-primary" disabled={busy}>
        {submitLabel}
      </button>
    </form>
  );
}
