/**
 * Bearer authentication of every `/api/v1beta` route: `Authorization: Bearer <API key>`. The key
 * is checked by the control plane (the same check as the wire front end) and never logged: the
 * logger redacts the header, and no message here repeats it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ControlPlane, Principal } from '../control/control-plane.js';
import { PgError, SqlState } from '../shared/errors.js';
import { lazyChild, type Logger } from '../shared/logger.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook before any `/api/v1beta` handler runs. */
    principal: Principal | null;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

function noKey(message: string): PgError {
  return new PgError(SqlState.InvalidAuthorizationSpecification, message, {
    hint: 'send the header "Authorization: Bearer <API key>"; create keys with `repobase key create <user>`',
  });
}

/** Adds the auth hook to `app` (an encapsulated plugin: only its routes are guarded). */
export function installAuth(app: FastifyInstance, control: ControlPlane): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (req) => {
    const header = req.headers.authorization;
    if (header === undefined || header === '') throw noKey('no API key');
    const m = BEARER.exec(header);
    if (!m?.[1]) throw noKey('malformed Authorization header: expected "Bearer <API key>"');
    req.principal = await control.authenticate(m[1]);
    req.log = lazyChild(req.log as Logger, { user: req.principal.user, keyId: req.principal.keyId });
  });
}

/** The authenticated principal of a guarded route. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new PgError(SqlState.InternalError, 'route is not behind the auth hook');
  return req.principal;
}
