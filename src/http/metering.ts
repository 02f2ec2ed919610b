/**
 * What the HTTP front end tells the control plane's audit log and usage meter: who and where a
 * request came from (the console's session cookie or a REST key, the address, the request id),
 * and the bytes of every authenticated request. Recording only queues in memory (see
 * control/audit.ts, control/usage.ts): a request never waits for it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { keyIdOf, keyOfPrincipal, type AuditEvent, type AuditOrigin } from '../control/audit.js';
import type { ControlPlane } from '../control/control-plane.js';
import { PgError, SqlState } from '../shared/errors.js';

/** An audited action of `req`: by its caller unless `user` says otherwise; `console` when a session cookie (or a console log-in) made it. */
export function audit(
  control: ControlPlane,
  req: FastifyRequest,
  event: Omit<AuditEvent, keyof AuditOrigin | 'user'> & { user?: string | null; frontEnd?: AuditOrigin['frontEnd'] },
): void {
  const key = req.principal ? keyOfPrincipal(req.principal) : {};
  control.audit.record({ frontEnd: req.webSession ? 'console' : 'rest', source: req.ip, requestId: req.id, user: req.principal?.user ?? null, ...key, ...event });
}

/** The failure of a Bearer key: a wrong key is a failed log-in (named by the key's public id, if it has the shape of one); rethrown. */
export function failedKey(control: ControlPlane, req: FastifyRequest, key: string, err: unknown): never {
  if (err instanceof PgError && err.code === SqlState.InvalidPassword) audit(control, req, { action: 'login_failed', user: null, frontEnd: 'rest', target: keyIdOf(key) });
  // A right key past its expiry: a failed log-in too, saying why.
  if (err instanceof PgError && err.code === SqlState.InvalidAuthorizationSpecification) audit(control, req, { action: 'login_failed', user: null, frontEnd: 'rest', target: keyIdOf(key), detail: 'expired' });
  throw err;
}

/**
 * Counts each authenticated request's bytes: the body it sent (Content-Length) and everything
 * written back, headers included (the socket's bytes written during the request: one request at
 * a time per connection, as HTTP/1.1 clients send them). Synchronous hooks, the starting count
 * kept on the request itself: nothing allocated per request.
 */
export function installUsageMetering(app: FastifyInstance, control: ControlPlane): void {
  app.decorateRequest('bytesWrittenBefore', 0);
  app.addHook('onRequest', (req, _reply, done) => {
    req.bytesWrittenBefore = req.raw.socket?.bytesWritten ?? 0;
    done();
  });
  app.addHook('onResponse', (req, _reply, done) => {
    if (req.principal) {
      const bytesOut = (req.raw.socket?.bytesWritten ?? 0) - req.bytesWrittenBefore;
      control.usage.add(req.principal.user, { bytesIn: Number(req.headers['content-length'] ?? 0) || 0, bytesOut: Math.max(0, bytesOut) });
    }
    done();
  });
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The socket's bytes written when the request came (see installUsageMetering). */
    bytesWrittenBefore: number;
  }
}
