import { Component, type ReactNode } from 'react';

/** Last resort for a render error or a code chunk that failed to load (e.g. after a deploy). */
export class ErrorBoundary extends Component<{ children: ReactNode }, { failed: boolean }> {
  override state = { failed: false };

  static getDerivedStateFromError(): { failed: boolean } {
    return { failed: true };
  }

  override render() {
    if (!this.state.failed) return this.props.children;
    return (
      <main className="page" id="main">
        <h1 className="page-title">Something went wrong</h1>
        <p>The console hit an unexpected error. Reloading the page usually helps.</p>
        <button type="button" className="button" onClick={() => window.location.reload()}>
          Reload
        </button>
      </main>
    );
  }
}
