/**
 * Bad input and refused uploads: each names the problem (and the line), answers the right
 * status and SQLSTATE, and leaves nothing behind — no table, no staging table, an existing
 * table untouched.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { columnsOf, fixture, leftovers, rows, upload } from './ingest-helpers.js';

let svc: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let repo: string;
beforeAll(async () => {
  svc = await startTestService({ importMaxBytes: 4096 });
  alice = await svc.user('alice');
  bob = await svc.user('bob');
  repo = `${alice.name}/files`;
  await svc.control.createRepo(repo);
});
afterAll(() => svc.stop());

async function refused(file: string, data: Buffer | string, fields: Record<string, string> = {}, key = alice.key) {
  const answer = await upload(svc, key, { repo, ...fields }, { name: file, data });
  const table = fields.table_name ?? file.replace(/\.[^.]+$/, '');
  expect(await columnsOf(svc, repo, table)).toEqual({});
  expect(await leftovers(svc)).toEqual([]);
  return { status: answer.status, error: answer.body.error! };
}

describe('bad files', () => {
  test('ragged rows name the line and the field counts', async () => {
    const { status, error } = await refused('ragged.csv', fixture('ragged.csv'));
    expect(status).toBe(400);
    expect(error.code).toBe('22P04');
    expect(error.message).toBe('line 3 has 2 fields; expected 3 like the first line');
  });

  test('invalid UTF-8 names the line', async () => {
    const { status, error } = await refused('latin1.csv', fixture('latin1.csv'));
    expect(status).toBe(400);
    expect(error.code).toBe('22021');
    expect(error.message).toBe('invalid byte sequence for encoding "UTF8" at line 3');
  });

  test('binary garbage, NUL bytes and an empty file', async () => {
    expect(await refused('binary.bin', fixture('binary.bin').subarray(0, 2000))).toMatchObject({ status: 400, error: { code: '22P04', message: 'the file is binary data in no supported format' } });
    expect(await refused('garbage.csv', fixture('binary.bin').subarray(0, 2000))).toMatchObject({ status: 400, error: { code: '22P04' } });
    expect(await refused('nul.csv', fixture('nul.csv'))).toMatchObject({ status: 400, error: { code: '22P04', message: 'the file is binary data in no supported format' } });
    expect(await refused('empty.csv', fixture('empty.csv'))).toMatchObject({ status: 400, error: { code: '22P04', message: 'the file is empty' } });
    expect(await refused('blank.csv', '\n\n')).toMatchObject({ status: 400, error: { code: '22P04' } });
  });

  test('malformed JSON names the line', async () => {
    const { error } = await refused('broken.ndjson', '{"a": 1}\n{"a": 2,}\n');
    expect(error).toMatchObject({ code: '22P02', message: 'invalid JSON at line 2: the record is not valid JSON' });
  });

  test('a file over importMaxBytes answers 413 with 54000', async () => {
    const big = 'a,b\n' + '1,2\n'.repeat(2000);
    const { status, error } = await refused('big.csv', big);
    expect(status).toBe(413);
    expect(error.code).toBe('54000');
  });
});

describe('refused targets', () => {
  test('table names that are not allowed', async () => {
    for (const name of ['x'.repeat(64), ' padded', 'tab\there', '_repobase_mine']) {
      const { status, error } = await refused('ok.csv', 'a\n1\n', { table_name: name });
      expect(status).toBe(400);
      expect(error.code).toBe('42602');
    }
  });

  test('unknown repo 404; a private repo of someone else answers the same; a readable one 403', async () => {
    const unknown = await upload(svc, alice.key, { repo: `${alice.name}/nope` }, { name: 't.csv', data: 'a\n1\n' });
    expect(unknown.status).toBe(404);
    const hidden = await upload(svc, bob.key, { repo }, { name: 't.csv', data: 'a\n1\n' });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error!.message).toBe(unknown.body.error!.message.replace(`${alice.name}/nope`, repo));
    await svc.control.setCollaborator({ owner: alice.name, repo: 'files' }, bob.name, 'read');
    const readOnly = await upload(svc, bob.key, { repo }, { name: 't.csv', data: 'a\n1\n' });
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.error!.code).toBe('42501');
    expect(await columnsOf(svc, repo, 't')).toEqual({});
  });

  test('create on an existing table is 409; a failed replace or append leaves the table untouched', async () => {
    const ok = await upload(svc, alice.key, { repo }, { name: 'keep.csv', data: 'id,n\n1,10\n2,20\n' });
    expect(ok.status).toBe(200);
    const again = await upload(svc, alice.key, { repo }, { name: 'keep.csv', data: 'id,n\n3,30\n' });
    expect(again.status).toBe(409);
    expect(again.body.error!.code).toBe('42P07');
    const badReplace = await upload(svc, alice.key, { repo, mode: 'replace' }, { name: 'keep.csv', data: 'id,n\n3,30\n4\n' });
    expect(badReplace.status).toBe(400);
    const badAppend = await upload(svc, alice.key, { repo, mode: 'append' }, { name: 'keep.csv', data: 'id,n\n3,30\n4,forty\n' });
    expect(badAppend.status).toBe(400);
    expect(badAppend.body.error).toMatchObject({ code: '22P02' });
    expect(badAppend.body.error!.message).toMatch(/^line 3, column "n": invalid input syntax for type bigint/);
    expect(await columnsOf(svc, repo, 'keep')).toEqual({ id: 'bigint', n: 'bigint' });
    expect(await rows(svc, `SELECT * FROM "${repo}".keep ORDER BY id`)).toEqual([
      ['1', '10'],
      ['2', '20'],
    ]);
    expect(await leftovers(svc)).toEqual([]);
  });

  test('append by header names; replace swaps schema and rows', async () => {
    await upload(svc, alice.key, { repo }, { name: 'people.csv', data: 'id,name\n1,Ann\n' });
    const appended = await upload(svc, alice.key, { repo, mode: 'append' }, { name: 'people.csv', data: 'name,id\nBen,2\n' });
    expect(appended.body).toMatchObject({ status: 'DONE', rows: 1 });
    expect(await rows(svc, `SELECT * FROM "${repo}".people ORDER BY id`)).toEqual([
      ['1', 'Ann'],
      ['2', 'Ben'],
    ]);
    const replaced = await upload(svc, alice.key, { repo, mode: 'replace' }, { name: 'people.csv', data: 'id,born\n7,2001-02-03\n' });
    expect(replaced.body).toMatchObject({ status: 'DONE', rows: 1 });
    expect(await columnsOf(svc, repo, 'people')).toEqual({ id: 'bigint', born: 'date' });
  });
});
