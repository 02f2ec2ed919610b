/**
 * Security headers of every answer (pages, assets, API), set by @fastify/helmet (OWASP's HTTP
 * headers cheat sheet). The console runs no inline script, so its policy needs no nonce and no
 * 'unsafe-inline' for scripts; inline styles are allowed because UI libraries set them.
 */
import type { FastifyHelmetOptions } from '@fastify/helmet';

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

/** Options for @fastify/helmet. */
export const securityHeaders: FastifyHelmetOptions = {
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
