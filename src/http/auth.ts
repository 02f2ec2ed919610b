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
import { isScoped, notWithScopedKey } from '../control/key-scope.js';
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

/** The API key of an `Authorization: Bearer <key>` header. */
function keyOf(header: string): string {
  const m = BEARER.exec(header);
  if (!m?.[1]) throw noKey('malformed Authorization header: expected "Bearer <API key>"');
  return m[1];
}

/** A key that failed: counted, audited as a failed log-in, rethrown. */
function keyFailed(req: FastifyRequest, control: ControlPlane, key: string, err: unknown): never {
  if (err instanceof PgError && err.code.startsWith('28')) authFailed.rest.value++;
  return failedKey(control, req, key, err);
}

/**
 * The caller of a Bearer key: at once when the key is cached (no promise, no wait: the REST API's
 * every request), else a promise of it. Throws, or rejects with, 28000 or 28P01.
 */
function bearer(req: FastifyRequest, control: ControlPlane, header: string): Principal | Promise<Principal> {
  const key = keyOf(header);
  let known: Principal | undefined;
  try {
    known = control.keys.peek(key);
  } catch (err: unknown) {
    keyFailed(req, control, key, err);
  }
  return known ?? control.keys.authenticate(key).catch((err: unknown) => keyFailed(req, control, key, err));
}

/** The caller of the console's session cookie; null without one on an `optional` route. */
async function cookie(req: FastifyRequest, reply: FastifyReply, control: ControlPlane, opts: AuthOptions, mode: RouteAuth): Promise<Principal | null> {
  const id = sessionCookie(req);
  if (id === undefined) {
    if (mode === 'optional') return null;
    throw noKey('no API key');
  }
  const session = await control.people.session(id);
  if (!session) {
    // A dead cookie would otherwise be sent with every request until it expires in the browser.
    clearSessionCookie(req, reply, opts.cookieSecure);
    if (mode === 'optional') return null;
    throw sessionEnded();
  }
  assertCsrf(req, session.csrfToken, opts.cookieSecure);
  // Sliding expiry: the browser's copy must live as long as the renewed session.
  if (session.renewed) setSessionCookie(req, reply, id, opts.cookieSecure);
  req.webSession = { ...session, id };
  return { user: session.user, keyId: session.label, role: session.user };
}

/** The request is `principal`'s: its log lines say so from here on. */
function signIn(req: FastifyRequest, principal: Principal | null): void {
  req.principal = principal;
  if (principal) req.log = lazyChild(req.log as Logger, { user: principal.user, keyId: principal.keyId });
}

/** Adds the auth hook to `app` (an encapsulated plugin: only its routes are guarded). */
export function installAuth(app: FastifyInstance, control: ControlPlane, opts: AuthOptions): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('webSession', null);
  // A callback hook, not an async one: a cached key signs the request in without a promise.
  app.addHook('onRequest', (req, reply, done) => {
    const mode = req.routeOptions.config.auth ?? 'required';
    if (mode === 'none') return done();
    const header = req.headers.authorization;
    let caller: Principal | null | Promise<Principal | null>;
    try {
      caller = header !== undefined && header !== '' ? bearer(req, control, header) : cookie(req, reply, control, opts, mode);
    } catch (err: unknown) {
      return done(err as Error);
    }
    if (!(caller instanceof Promise)) {
      signIn(req, caller);
      return done();
    }
    caller.then(
      (principal) => {
        signIn(req, principal);
        done();
      },
      (err: unknown) => done(err as Error),
    );
  });
}

/** The authenticated principal of a guarded route. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new PgError(SqlState.InternalError, 'route is not behind the auth hook');
  return req.principal;
}

/**
 * The principal of a route that manages the account (keys, repos, sharing, usage, the console):
 * a scoped key is refused with 42501 (403) naming what it may do instead.
 */
export function fullPrincipalOf(req: FastifyRequest, what: string): Principal {
  const principal = principalOf(req);
  if (isScoped(principal.key)) throw notWithScopedKey(principal.keyId, principal.key, what);
  return principal;
}
