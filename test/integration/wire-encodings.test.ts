/**
 * Client encodings and standard_conforming_strings over the wire: statements are judged as
 * Postgres reads them with the client's settings, and the client's bytes run unchanged with the
 * same settings upstream (at start-up, by SET, pipelined right after the SET, on pooled backends
 * shared with UTF-8 clients); an encoding the proxy cannot decode is refused with a reason.
 */
import iconv from 'iconv-lite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildParse, buildQuery, transcodeFrame } from '../../src/protocol/index.js';
import { clientText } from '../../src/shared/client-encoding.js';
import { RawClient, sync } from '../helpers/raw-wire.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };

beforeAll(async () => {
  svc = await startTestService({ pgSessionsPerUser: 1 });
  alice = await svc.user('alice');
  bob = await svc.user('bob');
  await svc.control.createRepo({ owner: alice.name, repo: 'words' });
  await svc.control.createRepo({ owner: bob.name, repo: 'private' });
  const b = new pg.Client(svc.pgOptions(bob.name, bob.key));
  await b.connect();
  await b.query(`CREATE TABLE "${bob.name}/private".t (secret text); INSERT INTO "${bob.name}/private".t VALUES ('bob''s secret')`);
  await b.end();
});

afterAll(async () => {
  await svc?.stop();
});

const utf8 = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');

/** A Query in `encoding` (the proxy's builders write UTF-8). */
function query(sql: string, encoding = 'UTF8'): Buffer {
  return transcodeFrame(buildQuery(sql), utf8, clientText(encoding)!.encode);
}

async function raw(user: { name: string; key: string }, params: Record<string, string> = {}): Promise<RawClient> {
  return RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: user.name, password: user.key }, params);
}

/** The UTF-8 hex of a text as the server stored it: ASCII answers whatever the client's encoding. */
const hex = (text: string) => Buffer.from(text, 'utf8').toString('hex');

describe('client encodings', () => {
  it('LATIN1 from start-up: statements read as LATIN1, stored as the characters they are', async () => {
    const c = await raw(alice, { client_encoding: 'LATIN1' });
    try {
      const repo = `"${alice.name}/words"`;
      expect(await c.send([query(`CREATE TABLE ${repo}.w (word text)`, 'LATIN1')], 1)).toContain('C CREATE TABLE');
      expect(await c.send([query(`INSERT INTO ${repo}.w VALUES ('café'), ('naïve')`, 'LATIN1')], 1)).toContain('C INSERT 0 2');
      const answer = await c.send([query(`SELECT encode(convert_to(word, 'UTF8'), 'hex') FROM ${repo}.w WHERE word = 'café'`, 'LATIN1')], 1);
      expect(answer).toContain(`D ${hex('café')}`);
      // An error in the proxy's words comes in the client's encoding too.
      const refused = await c.send([query(`SELECT 'é' FROM "${bob.name}/private".t`, 'LATIN1')], 1);
      expect(refused.join('\n')).toMatch(/E 42501/);
    } finally {
      c.close();
    }
  });

  it('SET client_encoding, with the next statement pipelined in the same write, and on the extended protocol', async () => {
    const c = await raw(alice);
    try {
      const answer = await c.send([query("SET client_encoding = 'KOI8R'"), query("SELECT encode(convert_to('Привет', 'UTF8'), 'hex')", 'KOI8R')], 2);
      expect(answer).toContain(`D ${hex('Привет')}`);
      const parse = transcodeFrame(buildParse('', "SELECT encode(convert_to('мир', 'UTF8'), 'hex')"), utf8, clientText('KOI8R')!.encode);
      const { buildBind, buildExecute } = await import('../../src/protocol/index.js');
      const ext = await c.send([parse, buildBind({ portal: '', statement: '', paramFormats: [], params: [], resultFormats: [] }), buildExecute(''), sync()], 1);
      expect(ext).toContain(`D ${hex('мир')}`);
      // Bytes that are no text in the encoding: 22021, and the session goes on.
      const bad = await c.send([query("SET client_encoding = 'WIN1252'"), Buffer.concat([Buffer.from('Q\0\0\0\x0fSELECT \'', 'latin1'), Buffer.from([0x81]), Buffer.from("'\0", 'latin1')])], 2);
      expect(bad.join('\n')).toMatch(/E 22021 invalid byte sequence for encoding "WIN1252"/);
      expect(await c.send([query('SELECT 1')], 1)).toContain('D 1');
    } finally {
      c.close();
    }
  });

  it('the same Parse bytes again after a change of encoding are read in the new one, where a rewrite rebuilds them (the relay remembers the Parse it decoded)', async () => {
    const c = await raw(alice, { client_encoding: 'LATIN1' });
    try {
      const { buildBind, buildExecute } = await import('../../src/protocol/index.js');
      // 0xE9 is é in LATIN1 and й in WIN1251. pg_backend_pid() makes the policy rewrite the
      // statement: the Parse sent is then built from the text as the relay read it.
      const parse = transcodeFrame(buildParse('', "SELECT encode(convert_to('é', 'UTF8'), 'hex'), pg_backend_pid() > 0"), utf8, clientText('LATIN1')!.encode);
      const run = () => c.send([parse, buildBind({ portal: '', statement: '', paramFormats: [], params: [], resultFormats: [] }), buildExecute(''), sync()], 1);
      expect(await run()).toContain(`D ${hex('é')}|t`);
      expect(await run()).toContain(`D ${hex('é')}|t`);
      expect(await c.send([query("SET client_encoding = 'WIN1251'")], 1)).toContain('C SET');
      expect(await run()).toContain(`D ${hex('й')}|t`);
    } finally {
      c.close();
    }
  });

  it('a LATIN1 client and a UTF-8 client on one backend each keep their own', async () => {
    const latin = await raw(alice, { client_encoding: 'LATIN1' });
    const plain = await raw(alice);
    try {
      for (let round = 0; round < 3; round++) {
        const a = await latin.send([query(`SELECT encode(convert_to('é${round}', 'UTF8'), 'hex'), current_setting('client_encoding')`, 'LATIN1')], 1);
        expect(a).toContain(`D ${hex(`é${round}`)}|LATIN1`);
        const b = await plain.send([query(`SELECT encode(convert_to('é${round}', 'UTF8'), 'hex'), current_setting('client_encoding')`)], 1);
        expect(b).toContain(`D ${hex(`é${round}`)}|UTF8`);
      }
    } finally {
      latin.close();
      plain.close();
    }
  });

  it('an encoding repobase cannot decode exactly is taken, at start-up and by SET, as Postgres takes it: statements in ASCII pass, others are refused', async () => {
    const euc = await raw(alice, { client_encoding: 'EUC_TW' });
    try {
      // 中 comes back in EUC_TW as Postgres converts it; written as an escape, the statement is ASCII.
      const a = await euc.send([query("SELECT U&'\\4E2D' AS c, encode(convert_to(U&'\\4E2D', 'EUC_TW'), 'hex') AS h, current_setting('client_encoding')")], 1);
      expect(a).toContain('C SELECT 1');
      expect(a.find((l) => l.startsWith('D '))).toMatch(/\|c4e3\|EUC_TW$/);
      const b = await euc.send([Buffer.concat([Buffer.from([0x51]), Buffer.alloc(4), Buffer.from([0x53, 0x45, 0x4c, 0x45, 0x43, 0x54, 0x20, 0x27, 0xc4, 0xe3, 0x27, 0x00])])].map((f) => (f.writeInt32BE(f.length - 1, 1), f)), 1);
      expect(b[0]).toMatch(/^E 0A000 client_encoding is EUC_TW in this session, which repobase cannot decode exactly/);
    } finally {
      euc.close();
    }
    const c = new pg.Client(svc.pgOptions(alice.name, alice.key));
    await c.connect();
    try {
      await c.query("SET client_encoding = 'JOHAB'");
      expect((await c.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      await c.query('RESET client_encoding');
      // psycopg 3 sets it by a parameter: known once Postgres has answered.
      await c.query({ text: 'SELECT set_config($1, $2, false)', values: ['client_encoding', 'utf8'] });
      expect((await c.query("SELECT 'é' AS e")).rows).toEqual([{ e: 'é' }]);
    } finally {
      await c.end();
    }
  });
});

describe('standard_conforming_strings off', () => {
  it('statements are judged as Postgres reads them: a string that hides a reference with it on does not hide it off', async () => {
    const c = new pg.Client(svc.pgOptions(alice.name, alice.key));
    await c.connect();
    try {
      await c.query('SET standard_conforming_strings = off');
      expect((await c.query("SELECT E'a\\\\b' AS e, 'a\\\\b' AS s")).rows).toEqual([{ e: 'a\\b', s: 'a\\b' }]);
      // With it on, the whole tail would be one string; off, \' ends the string and the sub-select runs.
      const sneaky = `SELECT 'a\\'', (SELECT secret FROM "${bob.name}/private".t) AS s --'`;
      const err = await c.query(sneaky).catch((e: unknown) => e as { code: string; message: string });
      // The proxy's refusal (Postgres' own would say "permission denied for schema").
      expect(err).toMatchObject({ code: '42501', message: `permission denied for repo "${bob.name}/private"` });
      await c.query('RESET standard_conforming_strings');
      // On again: the same text is one harmless string.
      expect((await c.query(sneaky)).rows).toHaveLength(1);
    } finally {
      await c.end();
    }
  });
});
