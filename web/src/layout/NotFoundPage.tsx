import { Link } from 'wouter';
import { PageTitle } from '../lib/PageTitle.tsx';

/**
 * The one answer for a missing page, a missing repo and a repo that is private to someone else:
 * the same words whatever the reason, so nobody learns which private repos exist.
 */
export function NotFoundPage() {
  return (
    <div className="not-found">
      <PageTitle title="Not found" />
      <p>There is nothing here, or it is not shared with you.</p>
      <p>
        <Link href="/">Back to your repos</Link>
      </p>
    </div>
  );
}
