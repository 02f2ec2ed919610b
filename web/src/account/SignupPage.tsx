import { Link, Redirect, useSearch } from 'wouter';
import { signUp } from '../api.ts';
import { AuthPage } from './AuthPage.tsx';
import { CredentialsForm } from './CredentialsForm.tsx';
import { returnPath } from './returnPath.ts';
import { useSession } from './session.tsx';

export function SignupPage() {
  const { state, started } = useSession();
  const search = useSearch();
  if (state.status === 'user') return <Redirect to={returnPath(search)} replace />;
  return (
    <AuthPage
      title="Create your account"
      footer={
        <>
          Already have an account? <Link href={search ? `/login?${search}` : '/login'}>Log in</Link>
        </>
      }
    >
      <CredentialsForm
        submitLabel="Sign up"
        passwordAutoComplete="new-password"
        usernameHint="Lowercase letters, digits and _, starting with a letter (2 to 39 characters). It is also your user name in Postgres."
        passwordHint="At least 10 characters."
        onSubmit={async (c) => started(await signUp(c))}
      />
    </AuthPage>
  );
}
