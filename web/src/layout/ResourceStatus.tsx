import type { ReactNode } from 'react';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import type { Resource } from '../lib/useResource.ts';
import { NotFoundPage } from './NotFoundPage.tsx';

/**
 * What a page shows instead of its resource while it loads or after it failed — the same Not
 * found page for a missing resource and one the person may not see — or undefined once it is there.
 */
export function resourceStatus<T>(resource: Resource<T>, what: string): ReactNode | undefined {
  if (resource.status === 'loading') {
    return (
      <p className="muted" role="status">
        Loading {what}…
      </p>
    );
  }
  if (resource.status === 'error') return resource.error.notFound ? <NotFoundPage /> : <ErrorMessage error={resource.error} />;
  return undefined;
}
