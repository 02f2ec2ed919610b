import { Link } from 'wouter';
import { useSession, useUser } from '../account/session.tsx';
import { ConnectButton } from '../connect/ConnectButton.tsx';

/** The bar on every logged-in page: home, who you are, the SQL editor, your account, Connect, Log out. */
export function Header() {
  const user = useUser();
  const { logOut } = useSession();
  return (
    <header className="site-header">
      <div className="site-header-inner">
        <Link href="/" className="brand">
          <span className="brand-mark" aria-hidden="true" />
          repobase
        </Link>
        <div className="header-actions">
          <span className="header-user">
            <span className="visually-hidden">Logged in as </span>
            {user}
          </span>
          <Link href="/sql" className="button button-quiet">
            SQL editor
          </Link>
          <Link href="/account" className="button button-quiet">
            Account
          </Link>
          <ConnectButton />
          <button type="button" className="button button-quiet" onClick={() => void logOut()}>
            Log out
          </button>
        </div>
      </div>
    </header>
  );
}
