import { Readable } from 'node:stream';
import { parse, serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import {
  buildAuthenticationOk,
  buildAuthenticationSasl,
  buildAuthenticationSaslContinue,
  buildBackendKeyData,
  buildCommandComplete,
  buildEmptyQueryResponse,
  buildErrorResponse,
  buildNoticeResponse,
  buildParameterStatus,
  buildReadyForQuery,
  decodeFrontend,
  FrameReader,
  type FrontendMessage,
  type PasswordPhase,
} from '../../../src/protocol/index.js';
import { PgError } from '../../../src/shared/errors.js';

// A second opinion on the byte layouts: node-postgres, which real clients use, must read what
// we build and write what we decode. A round trip through our own code alone would hide a
// mistake made the same way on both sides. (pg-protocol arrives with `pg`.)

async function parsedByPg(bytes: Buffer): Promise<Record<string, unknown>[]> {
  const messages: Record<string, unknown>[] = [];
  await parse(Readable.from([bytes]), (message) => {
    // Error's `message` is not enumerable: copy it by name.
    messages.push({ ...message, message: (message as { message?: unknown }).message } as Record<string, unknown>);
  });
  return messages;
}

function decodedByUs(bytes: Buffer, startup = false, phase: PasswordPhase = 'none'): FrontendMessage[] {
  const reader = new FrameReader({ source: 'frontend', startup });
  const messages: FrontendMessage[] = [];
  reader.push(bytes, (code, frame) => messages.push(decodeFrontend(code, frame, phase)));
  return messages;
}

describe('node-postgres reads what we build', () => {
  it('the messages of a login and a query', async () => {
    const stream = Buffer.concat([
      buildAuthenticationSasl(['SCRAM-SHA-256']),
      buildAuthenticationSaslContinue(Buffer.from('r=abc,s=c2FsdA==,i=4096')),
      buildAuthenticationOk(),
      buildParameterStatus('server_version', '17.6'),
      buildBackendKeyData(31337, -5),
      buildReadyForQuery('I'),
      buildCommandComplete('SELECT 1'),
      buildEmptyQueryResponse(),
      buildReadyForQuery('T'),
    ]);
    const messages = await parsedByPg(stream);
    expect(messages).toMatchObject([
      { name: 'authenticationSASL', mechanisms: ['SCRAM-SHA-256'] },
      { name: 'authenticationSASLContinue', data: 'r=abc,s=c2FsdA==,i=4096' },
      { name: 'authenticationOk' },
      { name: 'parameterStatus', parameterName: 'server_version', parameterValue: '17.6' },
      { name: 'backendKeyData', processID: 31337, secretKey: -5 },
      { name: 'readyForQuery', status: 'I' },
      { name: 'commandComplete', text: 'SELECT 1' },
      { name: 'emptyQuery' },
      { name: 'readyForQuery', status: 'T' },
    ]);
  });

  it('an ErrorResponse with every field, and a notice', async () => {
    const err = new PgError('42P01', 'relation "nope" does not exist', {
      detail: 'd', hint: 'h', position: 15,
      extra: { schema: 's', table: 't', column: 'c', dataType: 'dt', constraint: 'n', where: 'w',
        internalPosition: '3', internalQuery: 'iq', file: 'f.c', line: '9', routine: 'r' },
    });
    const notice = new PgError('01000', 'careful', { severity: 'WARNING' });
    const [error, warning] = await parsedByPg(Buffer.concat([buildErrorResponse(err), buildNoticeResponse(notice)]));
    expect(error).toMatchObject({
      name: 'error', message: 'relation "nope" does not exist', severity: 'ERROR', code: '42P01',
      detail: 'd', hint: 'h', position: '15', schema: 's', table: 't', column: 'c', dataType: 'dt',
      constraint: 'n', where: 'w', internalPosition: '3', internalQuery: 'iq', file: 'f.c', line: '9', routine: 'r',
    });
    expect(warning).toMatchObject({ name: 'notice', message: 'careful', severity: 'WARNING', code: '01000' });
  });
});

describe('we decode what node-postgres writes', () => {
  it('the startup phase', () => {
    expect(decodedByUs(serialize.requestSsl(), true)).toEqual([{ kind: 'ssl_request' }]);
    expect(decodedByUs(serialize.cancel(77, 1234), true)).toEqual([{ kind: 'cancel_request', processId: 77, secretKey: 1234 }]);
    expect(decodedByUs(serialize.startup({ user: 'alice', database: 'repobase', client_encoding: 'UTF8' }), true)).toEqual([
      { kind: 'startup', protocol: 196608, params: { user: 'alice', database: 'repobase', client_encoding: 'UTF8' } },
    ]);
  });

  it('authentication', () => {
    expect(decodedByUs(serialize.password('rb_key'), false, 'password')).toEqual([{ kind: 'password', password: 'rb_key' }]);
    expect(decodedByUs(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', 'n,,n=*,r=x'), false, 'sasl_initial')).toEqual([
      { kind: 'sasl_initial_response', mechanism: 'SCRAM-SHA-256', data: Buffer.from('n,,n=*,r=x') },
    ]);
    expect(decodedByUs(serialize.sendSCRAMClientFinalMessage('c=biws,r=x,p=y'), false, 'sasl')).toEqual([
      { kind: 'sasl_response', data: Buffer.from('c=biws,r=x,p=y') },
    ]);
  });

  it('a pipelined extended query, as pg sends it for a parameterised query', () => {
    const stream = Buffer.concat([
      serialize.parse({ name: 'q1', text: 'SELECT $1::text, $2', types: [25] }),
      serialize.bind({ statement: 'q1', portal: '', values: ['héllo', null] }),
      serialize.describe({ type: 'P', name: '' }),
      serialize.execute({ portal: '', rows: 10 }),
      serialize.close({ type: 'S', name: 'q1' }),
      serialize.flush(),
      serialize.sync(),
      serialize.query('SELECT 1'),
      serialize.copyData(Buffer.from('a\n')),
      serialize.copyDone(),
      serialize.copyFail('stop'),
      serialize.end(),
    ]);
    expect(decodedByUs(stream)).toEqual([
      { kind: 'parse', name: 'q1', sql: 'SELECT $1::text, $2', paramTypes: [25] },
      { kind: 'bind', portal: '', statement: 'q1', paramFormats: [0, 0], params: [Buffer.from('héllo'), null], resultFormats: [0] },
      { kind: 'describe', target: 'P', name: '' },
      { kind: 'execute', portal: '', maxRows: 10 },
      { kind: 'close', target: 'S', name: 'q1' },
      { kind: 'flush' },
      { kind: 'sync' },
      { kind: 'query', sql: 'SELECT 1' },
      { kind: 'copy_data', data: Buffer.from('a\n') },
      { kind: 'copy_done' },
      { kind: 'copy_fail', message: 'stop' },
      { kind: 'terminate' },
    ]);
  });
});
