// The messages the proxy reads or writes, converted between UTF-8 and a client's encoding.
import { describe, expect, test } from 'vitest';
import { buildErrorResponse, buildParse, buildQuery, clientText, decodeErrorResponse, decodeParse, decodeQuery, transcodeFrame } from '../../../src/protocol/index.js';
import { PgError } from '../../../src/shared/errors.js';

const latin1 = clientText('LATIN1')!;
const sjis = clientText('SJIS')!;
const utf8 = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');
const toUtf8 = (t: string) => Buffer.from(t, 'utf8');

describe('transcodeFrame', () => {
  test('a Query there and back', () => {
    const built = buildQuery("SELECT 'café'");
    const out = transcodeFrame(built, utf8, latin1.encode);
    expect(out.subarray(5).includes(Buffer.from([0xe9]))).toBe(true);
    expect(out.readUInt32BE(1)).toBe(out.length - 1);
    expect(decodeQuery(transcodeFrame(out, latin1.decode, toUtf8))).toBe("SELECT 'café'");
  });

  test('a Parse keeps its parameter types', () => {
    const built = buildParse('s1', "SELECT $1::text || 'ソ表'", [25]);
    const out = transcodeFrame(built, utf8, sjis.encode);
    expect(decodeParse(transcodeFrame(out, sjis.decode, toUtf8))).toEqual({ kind: 'parse', name: 's1', sql: "SELECT $1::text || 'ソ表'", paramTypes: [25] });
  });

  test('an error keeps every field', () => {
    const err = new PgError('42P01', 'relation "café" does not exist', { hint: 'voilà', position: 15 });
    const out = transcodeFrame(buildErrorResponse(err), utf8, latin1.encode);
    const back = decodeErrorResponse(transcodeFrame(out, latin1.decode, toUtf8));
    expect(back).toMatchObject({ code: '42P01', message: 'relation "café" does not exist', hint: 'voilà', position: 15 });
  });

  test('other messages pass as they are', () => {
    const sync = Buffer.from([0x53, 0, 0, 0, 4]);
    expect(transcodeFrame(sync, utf8, latin1.encode)).toBe(sync);
  });
});
