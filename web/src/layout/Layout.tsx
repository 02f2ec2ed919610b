import type { ReactNode } from 'react';
import { Header } from './Header.tsx';

/** A logged-in page: skip link, header, and the page itself in <main>. */
export function Layout({ children }: { children: ReactNode }) {
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Header />
      <main className="page" id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
