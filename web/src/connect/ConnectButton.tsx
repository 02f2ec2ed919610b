import { lazy, Suspense, useRef, useState } from 'react';
import type { RepoRef } from './ConnectDialog.tsx';

const load = () => import('./ConnectDialog.tsx');
const ConnectDialog = lazy(load);

/**
 * The `Connect` button; the dialog's code is loaded on first use (hovering or focusing the
 * button starts the download). Closing the dialog unmounts it, so a key shown in it is gone.
 */
export function ConnectButton({ repo, primary = false }: { repo?: RepoRef; primary?: boolean }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  return (
    <>
      <button
        ref={button}
        type="button"
        className={primary ? 'button button-primary' : 'button'}
        aria-haspopup="dialog"
        onPointerEnter={() => void load()}
        onFocus={() => void load()}
        onClick={() => setOpen(true)}
      >
        Connect
      </button>
      {open && (
        <Suspense fallback={null}>
          <ConnectDialog repo={repo} onClose={() => setOpen(false)} returnFocusTo={button} />
        </Suspense>
      )}
    </>
  );
}
