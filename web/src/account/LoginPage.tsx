import { Link, Redirect, useSearch } from 'wouter';
import { logIn } from '../api.ts';
import { AuthPage } from './AuthPage.tsx';
import { CredentialsForm } from './CredentialsForm.tsx';
import { returnPath } from './returnPath.ts';
import { useSession } from './session.tsx';

export function LoginPage() {
  const { state, started } = useSession();
  const search = useSearch();
  if (state.status === 'user') return <Redirect to={returnPath(search)} replace />;
  return (
    <AuthPage
      title="Log in to repobase"
      footer={
        <>
          New here? <Link href={search ? `/signup?${search}` : '/signup'}>Sign up</Link>
        </>
      }
    >
      {state.status === 'anonymous' && state.reason === 'ended' && (
        <p className="notice" role="status">
          Your session has ended. Log in again to continue.
        </p>
      )}
      <CredentialsForm submitLabel="Log in" passwordAutoComplete="current-password" onSubmit={async (c) => started(await logIn(c))} />
    </AuthPage>
  );
}
