/**
 * Authentication of every `/api/v1beta` route, one of two ways:
 *
 * - `Authorization: Bearer <API key>`: the key is checked by the control plane (the same check
 *   as the wire front end) and never logged: the logger redacts the header, and no message here
 *   repeats it.
 * - without that header, the console's session cookie (session-cookie.ts): the session is read
 *   from the control plane on every request, and a change must pass the CSRF check (csrf.ts).
 *
 * A route opts out with `config: { auth: 'none' }` (sign-up, log-in) or takes a caller when there
 * is one with `auth: 'optional'` (log-out).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ControlPlane, Principal, WebSession } from '../control/control-plane.js';
import { PgError, SqlState } from '../shared/errors.js';
import { lazyChild, type Logger } from '../shared/logger.js';
import { authFailed } from '../observe/metrics.js';
import { assertCsrf } from './csrf.js';
import { failedKey } from './metering.js';
import { clearSessionCookie, sessionCookie, setSessionCookie } from './session-cookie.js';

/** How a route is authenticated: required (the default), optional, or not at all. */
export type RouteAuth = 'required' | 'optional' | 'none';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook before any `/api/v1beta` handler runs. */
    principal: Principal | null;
    /** The console session the request was authenticated with (null with a Bearer key), with its cookie id. */
    webSession: (WebSession & { id: string }) | null;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
}

export interface AuthOptions {
  /** Config `cookieSecure`: the cookie is always Secure and an https Origin is ours. */
  cookieSecure: boolean;
}

const BEARER = /^Bearer +([^\s]+) *$/i;

function noKey(message: string): PgError {
  return new PgError(SqlState.InvalidAuthorizationSpecification, message, {
    hint: 'send the header "Authorization: Bearer <API key>" (create keys with `repobase key create <user>`), or log in: POST /api/v1beta/auth/login',
  });
}

function sessionEnded(): PgError {
  return new PgError(SqlState.InvalidAuthorizationSpecification, 'session expired or ended', { hint: 'log in again' });
}

async function bearer(req: FastifyRequest, control: ControlPlane, header: string): Promise<void> {
  const m = BEARER.exec(header);
  if (!m?.[1]) throw noKey('malformed Authorization header: expected "Bearer <API key>"');
  try {
    req.principal = await control.authenticate(m[1]);
  } catch (err: unknown) {
    if (err instanceof PgError && err.code.startsWith('28')) authFailed.rest.value++;
    failedKey(control, req, m[1], err);
  }
}

async function cookie(req: FastifyRequest, reply: FastifyReply, control: ControlPlane, opts: AuthOptions, mode: RouteAuth): Promise<void> {
  const id = sessionCookie(req);
  if (id === undefined) {
    if (mode === 'optional') return;
    throw noKey('no API key');
  }
  const session = await control.session(id);
  if (!session) {
    // A dead cookie would otherwise be sent with every request until it expires in the browser.
    clearSessionCookie(req, reply, opts.cookieSecure);
    if (mode === 'optional') return;
    throw sessionEnded();
  }
  assertCsrf(req, session.csrfToken, opts.cookieSecure);
  // Sliding expiry: the browser's copy must live as long as the renewed session.
  if (session.renewed) setSessionCookie(req, reply, id, opts.cookieSecure);
  req.webSession = { ...session, id };
  req.principal = { user: session.user, keyId: session.label };
}

/** Adds the auth hook to `app` (an encapsulated plugin: only its routes are guarded). */
export function installAuth(app: FastifyInstance, control: ControlPlane, opts: AuthOptions): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('webSession', null);
  app.addHook('onRequest', async (req, reply) => {
    const mode = req.routeOptions.config.auth ?? 'required';
    if (mode === 'none') return;
    const header = req.headers.authorization;
    if (header !== undefined && header !== '') await bearer(req, control, header);
    else await cookie(req, reply, control, opts, mode);
    if (req.principal) req.log = lazyChild(req.log as Logger, { user: req.principal.user, keyId: req.principal.keyId });
  });
}

/** The authenticated principal of a guarded route. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new PgError(SqlState.InternalError, 'route is not behind the auth hook');
  return req.principal;
}
