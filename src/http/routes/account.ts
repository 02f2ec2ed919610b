/**
 * `/auth/…`: people in the web console sign up, log in and out with a user name and password;
 * the answer sets the session cookie and carries the CSRF token the console sends back on
 * changes. API clients need none of this: they send a key.
 *
 * A new log-in always gets a new session id (an id planted before log-in is worth nothing after
 * it), and a failed one is answered after a delay that grows with the failures of the client's
 * address and of the user name, as on the wire front end.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ControlPlane, NewWebSession } from '../../control/control-plane.js';
import type { Config } from '../../shared/config.js';
import { PgError, SqlState } from '../../shared/errors.js';
import type { FailureThrottle } from '../../shared/throttle.js';
import { fullPrincipalOf } from '../auth.js';
import { audit } from '../metering.js';
import { authFailed } from '../../observe/metrics.js';
import { assertSameOrigin } from '../csrf.js';
import { Credentials, SessionInfo } from '../schemas.js';
import { clearSessionCookie, sessionCookie, setSessionCookie } from '../session-cookie.js';

export interface AccountDeps {
  control: ControlPlane;
  config: Pick<Config, 'signup' | 'cookieSecure'>;
  /** Shared by the routes of one app: failures are counted per client address and per user name. */
  throttle: FailureThrottle;
}

function signupClosed(): PgError {
  return new PgError(SqlState.InsufficientPrivilege, 'sign-up is closed on this server', {
    hint: 'ask an administrator to create your account (repobase user create <name>, then repobase user set-password <name>)',
  });
}

/** Routes under `/auth/`. */
export const accountRoutes: FastifyPluginAsyncTypebox<AccountDeps> = async (app, { control, config, throttle }) => {
  const secure = config.cookieSecure;

  /** Answers with a fresh session: cookie set, and the session that came with the request (if any) ended. */
  async function startSession(req: FastifyRequest, reply: FastifyReply, session: NewWebSession, status: number) {
    const previous = sessionCookie(req);
    if (previous !== undefined) await control.people.endSession(previous);
    setSessionCookie(req, reply, session.id, secure);
    return reply.code(status).header('cache-control', 'no-store').send({ user: session.user, csrf_token: session.csrfToken });
  }

  app.post(
    '/auth/signup',
    {
      config: { auth: 'none' },
      schema: {
        summary: 'create an account (user and password) and log in; sets the session cookie',
        tags: ['account'],
        body: Credentials,
        response: { 201: SessionInfo },
      },
    },
    async (req, reply) => {
      // Logging a victim's browser into the attacker's account is CSRF too.
      assertSameOrigin(req, secure);
      if (config.signup === 'closed') throw signupClosed();
      const session = await control.people.signUp(req.body.username, req.body.password);
      audit(control, req, { action: 'signup', user: session.user, frontEnd: 'console' });
      return startSession(req, reply, session, 201);
    },
  );

  app.post(
    '/auth/login',
    {
      config: { auth: 'none' },
      schema: {
        summary: 'log in with user name and password; sets a new session cookie',
        description: 'A wrong password and an unknown user get the same answer: 401 28P01 "invalid user name or password".',
        tags: ['account'],
        body: Credentials,
        response: { 200: SessionInfo },
      },
    },
    async (req, reply) => {
      assertSameOrigin(req, secure);
      const { username, password } = req.body;
      const keys = [`address:${req.ip}`, `user:${username}`];
      let session: NewWebSession;
      try {
        session = await control.people.logIn(username, password);
      } catch (err: unknown) {
        if (err instanceof PgError && err.code === SqlState.InvalidPassword) {
          audit(control, req, { action: 'login_failed', user: username, frontEnd: 'console' });
          authFailed.console.value++;
          await Promise.all(keys.map((k) => throttle.failed(k)));
        }
        throw err;
      }
      for (const k of keys) throttle.succeeded(k);
      audit(control, req, { action: 'login', user: username, frontEnd: 'console' });
      return startSession(req, reply, session, 200);
    },
  );

  app.post(
    '/auth/logout',
    {
      config: { auth: 'optional' },
      schema: {
        summary: 'end the session of the cookie and clear the cookie (needs X-CSRF-Token like every change)',
        description: 'Answers 204 also when there was no session.',
        tags: ['account'],
      },
    },
    async (req, reply) => {
      if (req.webSession) await control.people.endSession(req.webSession.id);
      clearSessionCookie(req, reply, secure);
      return reply.code(204).send();
    },
  );

  app.get(
    '/auth/session',
    {
      schema: {
        summary: 'who is calling; with the session cookie, also the CSRF token for changes',
        tags: ['account'],
        response: { 200: SessionInfo },
      },
    },
    async (req, reply) => {
      // A scoped key is no way into the console.
      const user = fullPrincipalOf(req, 'signing in to the console').user;
      return reply.header('cache-control', 'no-store').send({ user, csrf_token: req.webSession?.csrfToken ?? null });
    },
  );
};
