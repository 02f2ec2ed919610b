/**
 * `/keys/`: the caller's own API keys, each with a name, the repos it reaches, its access and its
 * expiry (control/key-scope.ts). Secrets are shown once, on creation, and never listed. Only a
 * full key (or the console) manages keys: a scoped key is refused with 403.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ControlPlane, KeyInfo as StoredKey } from '../../control/control-plane.js';
import { PgError, SqlState } from '../../shared/errors.js';
import { fullPrincipalOf } from '../auth.js';
import { audit } from '../metering.js';
import { CreateKey, KeyInfo, KeyList, KeyParams, NewKey } from '../schemas.js';

const iso = (d: Date | null): string | null => d?.toISOString() ?? null;

/** The fields of a request for a new key. */
const KEY_FIELDS: ReadonlySet<string> = new Set(Object.keys(CreateKey.properties));

function keyJson(k: StoredKey, now = Date.now()): KeyInfo {
  return {
    id: k.id,
    prefix: k.prefix,
    name: k.name,
    repos: k.repos === null ? null : [...k.repos],
    access: k.access,
    expires_at: iso(k.expiresAt),
    expired: k.expiresAt !== null && k.expiresAt.getTime() <= now,
    created_at: k.createdAt.toISOString(),
    last_used_at: iso(k.lastUsedAt),
  };
}

/** Routes under `/keys/`. */
export const keyRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get('/keys/', { schema: { summary: 'your keys that were not revoked, expired ones included (no secrets)', tags: ['keys'], response: { 200: KeyList } } }, async (req) => {
    const keys = await control.keys.list(fullPrincipalOf(req, 'listing keys').user);
    return { keys: keys.map((k) => keyJson(k)) };
  });

  app.post(
    '/keys/',
    {
      schema: {
        summary: 'create a key; its secret is in this answer only',
        description:
          'An empty body makes a full key. With "repos" (and "access": "read" or "write") the key reaches those repos only; a repo you neither own nor collaborate on is 404 like a missing one, write access to a repo you may only read is 403.',
        tags: ['keys'],
        body: CreateKey,
        response: { 201: NewKey },
      },
      // The body is optional: none at all makes a full key, as before keys had a scope. A field
      // it does not know is refused, not dropped: a misspelt "expires_at" must not make a key
      // that never expires.
      preValidation: (req, _reply, done) => {
        req.body ??= {};
        const unknown = typeof req.body === 'object' ? Object.keys(req.body).find((k) => !KEY_FIELDS.has(k)) : undefined;
        if (unknown === undefined) return done();
        done(new PgError(SqlState.InvalidParameterValue, `unknown field "${unknown}"`, { hint: `fields: ${[...KEY_FIELDS].join(', ')}` }));
      },
    },
    async (req, reply) => {
      const user = fullPrincipalOf(req, 'creating keys').user;
      const body = req.body;
      const key = await control.keys.create(user, {
        name: body.name,
        repos: body.repos,
        access: body.access,
        expiresAt: body.expires_at == null ? null : new Date(body.expires_at),
      });
      audit(control, req, { action: 'key_create', target: key.id, detail: `${key.access}${key.repos === null ? '' : ` ${key.repos.join(',')}`}${key.name ? ` "${key.name}"` : ''}` });
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .send({ id: key.id, prefix: `rb_${key.id}`, key: key.key, name: key.name, repos: key.repos === null ? null : [...key.repos], access: key.access, expires_at: iso(key.expiresAt), created_at: key.createdAt.toISOString() });
    },
  );

  // Another user's key id answers 404 like an unknown one: key ids are not a way to probe.
  app.delete('/keys/:id', { schema: { summary: 'revoke one of your keys; it stops working at once, and its open sessions end', tags: ['keys'], params: KeyParams } }, async (req, reply) => {
    await control.keys.revoke(req.params.id, fullPrincipalOf(req, 'revoking keys').user);
    audit(control, req, { action: 'key_revoke', target: req.params.id });
    return reply.code(204).send();
  });
};
