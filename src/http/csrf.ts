/**
 * Cross-site request forgery defences for cookie-authenticated requests (OWASP's CSRF cheat
 * sheet): a request that changes something must carry the session's token in `X-CSRF-Token`
 * (another site can make a browser send the cookie, but cannot read the token), and its
 * `Origin`, when the browser sends one, must be this server. Requests with a Bearer key need
 * neither: a browser never adds that header on its own.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { PgError, SqlState } from '../shared/errors.js';
import { ownOrigins } from './origin.js';

export const CSRF_HEADER = 'x-csrf-token';

/** Methods that change nothing (RFC 9110 safe methods): no token needed. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function refused(message: string): PgError {
  return new PgError(SqlState.InsufficientPrivilege, message, {
    hint: 'the console sends the csrf_token of GET /api/v1beta/auth/session in the X-CSRF-Token header; API clients use "Authorization: Bearer <API key>" instead of the cookie',
  });
}

/** Refuses a request whose `Origin` header names another site (`null` included). */
export function assertSameOrigin(req: FastifyRequest, httpsInFront: boolean): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  if (!ownOrigins(req, httpsInFront).includes(origin.toLowerCase())) {
    throw refused(`cross-site request refused (CSRF): Origin "${origin}" is not this server`);
  }
}

function sameToken(sent: string, expected: string): boolean {
  // Digests have equal lengths, so the comparison takes the same time whatever was sent.
  return timingSafeEqual(hash('sha256', sent, 'buffer'), hash('sha256', expected, 'buffer'));
}

/** Refuses a cookie-authenticated change without the session's CSRF token or from another origin. */
export function assertCsrf(req: FastifyRequest, token: string, httpsInFront: boolean): void {
  if (SAFE_METHODS.has(req.method)) return;
  assertSameOrigin(req, httpsInFront);
  const sent = req.headers[CSRF_HEADER];
  if (typeof sent !== 'string' || !sameToken(sent, token)) throw refused('missing or wrong CSRF token (X-CSRF-Token header)');
}
