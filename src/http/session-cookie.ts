/**
 * The console's session cookie: `rb_session=<random id>; HttpOnly; SameSite=Lax; Path=/`, and
 * `Secure` over https (or always, with `cookieSecure`). HttpOnly keeps it from page scripts;
 * SameSite=Lax keeps other sites' forms and fetches from sending it on anything but top-level
 * GET navigations, and the CSRF token covers the rest (see csrf.ts).
 *
 * Read and written with the `cookie` library directly, where the auth hook and the account routes
 * need it: a fastify cookie plugin would add a hook to every answer, the REST API's included.
 */
import { parseCookie, stringifySetCookie, type SetCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_LIFETIME_MS } from '../control/accounts.js';

export const SESSION_COOKIE = 'rb_session';

/** The cookie's attributes; `Secure` (sent back over https only) over https or when configured. */
function attributes(req: FastifyRequest, cookieSecure: boolean): Omit<SetCookie, 'name' | 'value'> {
  return { httpOnly: true, sameSite: 'lax', path: '/', secure: cookieSecure || req.protocol === 'https' };
}

/** The session id the request carries, if any. */
export function sessionCookie(req: FastifyRequest): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const id = parseCookie(header)[SESSION_COOKIE];
  return id === '' ? undefined : id;
}

/** The answer's one Set-Cookie header: the last word on the session cookie wins. */
function setCookie(reply: FastifyReply, cookie: SetCookie): void {
  reply.removeHeader('set-cookie');
  reply.header('set-cookie', stringifySetCookie(cookie));
}

/** Sends the cookie for session `id`, valid as long as a fresh session. */
export function setSessionCookie(req: FastifyRequest, reply: FastifyReply, id: string, cookieSecure: boolean): void {
  setCookie(reply, { name: SESSION_COOKIE, value: id, ...attributes(req, cookieSecure), maxAge: SESSION_LIFETIME_MS / 1000 });
}

/** Tells the browser to forget the cookie. */
export function clearSessionCookie(req: FastifyRequest, reply: FastifyReply, cookieSecure: boolean): void {
  setCookie(reply, { name: SESSION_COOKIE, value: '', ...attributes(req, cookieSecure), expires: new Date(0), maxAge: 0 });
}
