/**
 * The console's session cookie: `rb_session=<random id>; HttpOnly; SameSite=Lax; Path=/`, and
 * `Secure` over https (or always, with `cookieSecure`). HttpOnly keeps it from page scripts;
 * SameSite=Lax keeps other sites' forms and fetches from sending it on anything but top-level
 * GET navigations, and the CSRF token covers the rest (see csrf.ts).
 */
import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_LIFETIME_MS } from '../control/accounts.js';

export const SESSION_COOKIE = 'rb_session';

/** The cookie's attributes; `Secure` (sent back over https only) over https or when configured. */
function attributes(req: FastifyRequest, cookieSecure: boolean): CookieSerializeOptions {
  return { httpOnly: true, sameSite: 'lax', path: '/', secure: cookieSecure || req.protocol === 'https' };
}

/** The session id the request carries, if any (its cookies parsed here, once: @fastify/cookie runs with `hook: false`). */
export function sessionCookie(req: FastifyRequest): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  req.cookies ??= req.server.parseCookie(header);
  const id = req.cookies[SESSION_COOKIE];
  return id === '' ? undefined : id;
}

/** Sends the cookie for session `id`, valid as long as a fresh session. */
export function setSessionCookie(req: FastifyRequest, reply: FastifyReply, id: string, cookieSecure: boolean): void {
  reply.setCookie(SESSION_COOKIE, id, { ...attributes(req, cookieSecure), maxAge: SESSION_LIFETIME_MS / 1000 });
}

/** Tells the browser to forget the cookie. */
export function clearSessionCookie(req: FastifyRequest, reply: FastifyReply, cookieSecure: boolean): void {
  reply.clearCookie(SESSION_COOKIE, attributes(req, cookieSecure));
}
