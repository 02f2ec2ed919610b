import { useState } from 'react';

/** Whether focus can go back to `el`: still in the page and not disabled. */
export function focusable(el: HTMLElement | null | undefined): el is HTMLElement {
  return !!el && el.isConnected && !(el as HTMLButtonElement).disabled;
}

/**
 * The element that had focus when a dialog mounted (what opened it): a function to call when
 * the dialog closes, giving null when that element can no longer take focus back.
 */
export function useOpener(): () => HTMLElement | null {
  const [opener] = useState(() => (document.activeElement instanceof HTMLElement ? document.activeElement : null));
  return () => (focusable(opener) ? opener : null);
}
