import type { ReactNode } from 'react';
import { PageTitle } from '../lib/PageTitle.tsx';

/** The frame of the log-in and sign-up pages: no header, one card in the middle. */
export function AuthPage({ title, children, footer }: { title: string; children: ReactNode; footer: ReactNode }) {
  return (
    <main className="auth" id="main">
      <div className="auth-card">
        <p className="brand auth-brand" aria-hidden="true">
          <span className="brand-mark" />
          repobase
        </p>
        <PageTitle title={title} />
        {children}
        <p className="auth-footer">{footer}</p>
      </div>
    </main>
  );
}
