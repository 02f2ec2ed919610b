/** `/keys/`: the caller's own API keys. Secrets are shown once, on creation, and never listed. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ControlPlane } from '../../control/control-plane.js';
import { principalOf } from '../auth.js';
import { audit } from '../metering.js';
import { KeyList, KeyParams, NewKey } from '../schemas.js';

/** Routes under `/keys/`. */
export const keyRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get('/keys/', { schema: { summary: 'your active keys (no secrets)', tags: ['keys'], response: { 200: KeyList } } }, async (req) => {
    const keys = await control.listKeys(principalOf(req).user);
    return {
      keys: keys.map((k) => ({ id: k.id, prefix: k.prefix, created_at: k.createdAt.toISOString(), last_used_at: k.lastUsedAt?.toISOString() ?? null })),
    };
  });

  app.post('/keys/', { schema: { summary: 'create a key; its secret is in this answer only', tags: ['keys'], response: { 201: NewKey } } }, async (req, reply) => {
    const key = await control.createKey(principalOf(req).user);
    audit(control, req, { action: 'key_create', target: key.id });
    return reply.code(201).header('cache-control', 'no-store').send({ id: key.id, prefix: `rb_${key.id}`, key: key.key });
  });

  // Another user's key id answers 404 like an unknown one: key ids are not a way to probe.
  app.delete('/keys/:id', { schema: { summary: 'revoke one of your keys; it stops working at once', tags: ['keys'], params: KeyParams } }, async (req, reply) => {
    await control.revokeKey(req.params.id, principalOf(req).user);
    audit(control, req, { action: 'key_revoke', target: req.params.id });
    return reply.code(204).send();
  });
};
