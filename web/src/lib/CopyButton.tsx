import { useEffect, useState } from 'react';

async function copyText(text: string): Promise<boolean> {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // denied (e.g. not a secure context): fall back below
    }
  }
  // Older browsers and plain-http pages: copy through a temporary text area.
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  return ok;
}

/**
 * A `Copy` button; `label` is its accessible name (e.g. "Copy psql command"). The outcome is
 * announced in a status next to it, so the button's own name never changes.
 */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [outcome, setOutcome] = useState<'' | 'Copied' | 'Copy failed: select the text and copy it'>('');
  useEffect(() => {
    if (!outcome) return;
    const timer = setTimeout(() => setOutcome(''), 2500);
    return () => clearTimeout(timer);
  }, [outcome]);
  return (
    <span className="copy">
      <button type="button" className="button button-small" aria-label={label} onClick={() => void copyText(text).then((ok) => setOutcome(ok ? 'Copied' : 'Copy failed: select the text and copy it'))}>
        Copy
      </button>
      <span className="copy-status" role="status">
        {outcome}
      </span>
    </span>
  );
}
