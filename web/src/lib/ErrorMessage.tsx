import type { ApiError } from '../api.ts';

/** An error for people: the server's message and, when it has one, its hint. Announced at once. */
export function ErrorMessage({ error }: { error: ApiError | null | undefined }) {
  if (!error) return null;
  return (
    <div className="alert" role="alert">
      <p className="alert-message">{error.message}</p>
      {error.hint && <p className="alert-hint">{error.hint}</p>}
    </div>
  );
}
