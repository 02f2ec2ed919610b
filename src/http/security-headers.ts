/**
 * Security headers (OWASP's HTTP headers and REST security cheat sheets), by what an answer is:
 *
 * - **pages** (the console, the API docs, everything outside the JSON API): helmet's full set —
 *   a Content-Security-Policy without inline scripts (the console runs none), frame and referrer
 *   policies, cross-origin isolation headers and the legacy ones. Inline styles are allowed
 *   because UI libraries set them.
 * - **API answers** (`/api/…` but the docs, `/healthz`, `/metrics`): JSON, CSV or an event
 *   stream, never rendered as a document. They carry what still applies to them: `nosniff` (a
 *   browser never reads one as HTML or script), a CSP that allows nothing and no framing (should
 *   one be opened as a page anyway), `X-Frame-Options: DENY`, and `Cross-Origin-Resource-Policy:
 *   same-origin` (no other site may load one as an image or script). The rest of the page set
 *   (script sources, referrer policy, cross-origin opener policy…) governs what a document does,
 *   and an API answer is none.
 *
 * Both sets are computed once: helmet's middleware builds its headers from its options on every
 * call, which cost the REST route ≈ 6 % of its CPU when it ran per request.
 */
import helmet, { type HelmetOptions } from 'helmet';

/** The console's Content-Security-Policy: only this server's own scripts, styles, data and frames of nobody. */
export const CONTENT_SECURITY_POLICY = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'", "'unsafe-inline'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'font-src': ["'self'"],
  'object-src': ["'none'"],
  'base-uri': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
} as const;

/** helmet's options for pages. */
const PAGE_OPTIONS: HelmetOptions = {
  // Exactly the directives above: helmet's defaults add upgrade-insecure-requests, which would
  // break a console served over plain HTTP on a LAN address.
  contentSecurityPolicy: { useDefaults: false, directives: CONTENT_SECURITY_POLICY },
  // Not no-referrer: under it a browser sends `Origin: null` on same-origin POSTs, and the CSRF
  // check could no longer tell the console from a sandboxed attacker page.
  referrerPolicy: { policy: 'strict-origin-when-cross-origin' },
  xFrameOptions: { action: 'deny' },
  // This server speaks plain HTTP; HSTS belongs to whatever terminates TLS in front of it.
  strictTransportSecurity: false,
};

/** The headers helmet's middleware sets with `options`, collected once (they depend on nothing in the request). */
function helmetHeaders(options: HelmetOptions): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const res = {
    setHeader: (name: string, value: string | number | readonly string[]) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  helmet(options)({} as never, res as never, (err?: unknown) => {
    if (err) throw err;
  });
  return Object.freeze(headers);
}

/** Headers of pages: helmet's full set. */
export const PAGE_HEADERS = helmetHeaders(PAGE_OPTIONS);

/** Headers of API answers (see above). */
export const API_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
});

/** Whether `url` (path and query) is answered by the API rather than as a page: `/api/…` but the docs, `/healthz`, `/metrics`. */
export function isApiAnswer(url: string): boolean {
  if (url.startsWith('/api/')) return !url.startsWith('/api/docs');
  return url === '/healthz' || url.startsWith('/healthz?') || url === '/metrics' || url.startsWith('/metrics?');
}
