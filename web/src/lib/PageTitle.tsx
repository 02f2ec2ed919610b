import { useEffect, useRef, type ReactNode } from 'react';

/**
 * The page's h1, also the document title. After a client-side navigation focus would be left on
 * nothing (the link that was followed is gone); the heading takes it, so keyboard and
 * screen-reader users start at the top of the new page.
 */
export function PageTitle({ title, children }: { title: string; children?: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · repobase`;
    const active = document.activeElement;
    if (!active || active === document.body) ref.current?.focus();
  }, [title]);
  return (
    <h1 ref={ref} tabIndex={-1} className="page-title">
      {children ?? title}
    </h1>
  );
}
