import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { installErrorHandling } from '../../../src/http/errors.js';
import { PgError } from '../../../src/shared/errors.js';
import { createLogger } from '../../../src/shared/logger.js';

async function appWith(thrown: unknown) {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const app = Fastify({ loggerInstance: createLogger('info', sink) as FastifyBaseLogger, genReqId: () => 'req-test-1' });
  installErrorHandling(app);
  app.post('/boom', async () => {
    throw thrown;
  });
  return { app, lines };
}

describe('the error handler', () => {
  it('answers an unexpected exception as XX000 internal error with the request id, and logs its stack', async () => {
    const { app, lines } = await appWith(new Error('connection string postgres://admin:hunter2@db'));
    const res = await app.inject({ method: 'POST', url: '/boom', payload: { query_string: 'SELECT 1' } });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      error: { code: 'XX000', message: 'internal error', detail: 'request id req-test-1', hint: null, position: null },
      query_string: 'SELECT 1',
    });
    expect(res.body).not.toContain('hunter2');
    const log = lines.join('');
    expect(log).toContain('hunter2'); // the operator sees what happened…
    expect(log).toContain('at '); // …with its stack
    expect(log).toContain('req-test-1');
  });

  it('keeps every field of a PgError and picks the status by SQLSTATE', async () => {
    const { app } = await appWith(new PgError('42501', 'permission denied for repo "bob/x"', { hint: 'ask bob', detail: 'd', position: 7 }));
    const res = await app.inject({ method: 'POST', url: '/boom', payload: {} });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: { code: '42501', message: 'permission denied for repo "bob/x"', detail: 'd', hint: 'ask bob', position: 7 } });
  });

  it('hides the message of a Postgres error that maps to 500 too', async () => {
    const { app } = await appWith(new PgError('XX001', 'could not read block 7 in file "base/1/2"'));
    const res = await app.inject({ method: 'POST', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toContain('block 7');
  });

  it('adds WWW-Authenticate to 401 answers', async () => {
    const { app } = await appWith(new PgError('28000', 'no API key'));
    const res = await app.inject({ method: 'POST', url: '/boom' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="repobase"');
  });
});
