/**
 * Where to go after logging in: the `next` query parameter, only if it is a path of this site
 * (never `//evil.example` or `https://…`: an open redirect).
 */
export function returnPath(search: string): string {
  const next = new URLSearchParams(search).get('next');
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  return next;
}

/** `/login?next=<path>` for a page that needs a session. */
export function loginPath(path: string, search: string): string {
  const here = search ? `${path}?${search}` : path;
  return here === '/' ? '/login' : `/login?next=${encodeURIComponent(here)}`;
}
