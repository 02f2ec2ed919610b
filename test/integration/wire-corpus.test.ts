/**
 * Raw-bytes differential: every entry of the wire corpus (test/fixtures/wire-corpus.ts), valid
 * and invalid client messages alike, is sent as the same bytes to Postgres directly (as the
 * user's own role) and to repobase, and must get the same answers, message by message: the type
 * of each, SQLSTATE and message of errors, rows and command tags, ReadyForQuery's transaction
 * status, and whether the server closes the connection. Where repobase differs on purpose
 * (`DIFFERENCES`, listed in docs/wire-differences.md) or by a known accident (`KNOWN`), both sides' answers
 * are asserted as they are, so that a change on either side shows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolePassword } from '../../src/upstream/roles.js';
import { corpus } from '../fixtures/wire-corpus.js';
import { RawClient, q, type Answer } from '../helpers/raw-wire.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let repo: string;

interface Expected {
  postgres: Answer[];
  repobase: Answer[];
}

/** On purpose, and in docs/wire-differences.md. */
const DIFFERENCES: Record<string, Expected> = {
  // The function call message names a function by OID, out of the policy's sight.
  FunctionCall: { postgres: ['V', 'Z I'], repobase: ['E 0A000 the function call protocol message is supported only for the large-object functions (lo_open, lo_close, loread, lowrite, lo_lseek, lo_lseek64, lo_tell, lo_tell64, lo_truncate, lo_truncate64, lo_creat, lo_create, lo_unlink); function 177 is not one', 'Z I'] },
  // The proxy reads Query and Parse itself (the policy needs the text): a malformed one ends
  // the connection, as any malformed frame does; Postgres answers an ERROR and goes on.
  'Query without its terminating NUL': {
    postgres: ['E 08P01 invalid string in message', 'Z I'],
    repobase: ['E 08P01 malformed Query message: string is not NUL-terminated', 'closed'],
  },
  'Query with an embedded NUL': {
    postgres: ['E 08P01 invalid message format', 'Z I'],
    repobase: ['E 08P01 malformed Query message: 9 unexpected trailing bytes', 'closed'],
  },
  'Parse with a negative type count': {
    postgres: ['E 08P01 insufficient data left in message', 'Z I'],
    repobase: ['E 08P01 malformed Parse message: message is truncated', 'closed'],
  },
  // Framing errors: the same FATAL 08P01 and close, in the proxy's words; where Postgres closes
  // without a word (a length it cannot frame), the proxy says why.
  'unknown message type': {
    postgres: ['E 08P01 invalid frontend message type 113', 'closed'],
    repobase: ["E 08P01 invalid message type 0x71 ('q')", 'closed'],
  },
  'message type zero (a startup packet after log-in)': {
    postgres: ['E 08P01 invalid frontend message type 0', 'closed'],
    repobase: ['E 08P01 invalid message type 0x00', 'closed'],
  },
  'length below 4': { postgres: ['closed'], repobase: ["E 08P01 invalid message length 3 for message type 0x51 ('Q')", 'closed'] },
  'length of a gigabyte': { postgres: ['closed'], repobase: ['E 08P01 message of 1073741825 bytes exceeds the limit of 268435456 bytes', 'closed'] },
};

/** By accident: reported, asserted as they are until fixed. */
const KNOWN: Record<string, Expected> = {
  // The SQLSTATE is Postgres', the words are not (they leave out the offending bytes).
  'a query with invalid UTF-8': {
    postgres: ['E 22021 invalid byte sequence for encoding "UTF8": 0xff', 'Z I'],
    repobase: ['E 22021 invalid byte sequence for encoding "UTF8" in Query message', 'Z I'],
  },
};

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  await svc.control.createRepo({ owner: alice.name, repo: 'corpus' });
  repo = `${alice.name}/corpus`;
  const c = await proxied();
  expect(await c.send([q('CREATE TABLE r (id int)')], 1)).toEqual(['C CREATE TABLE', 'Z I']);
  c.close();
});

afterAll(async () => {
  await svc?.stop();
});

/** Each client starts in the repo, with a table `t` of its own (so that entries can run at once). */
const startup = () => ({ search_path: `"${repo}"` });

function direct(): Promise<RawClient> {
  const url = new URL(svc.config.upstreamUrl);
  return RawClient.connect({ host: url.hostname, port: Number(url.port), database: url.pathname.slice(1), user: alice.name, password: rolePassword(svc.config.secret, alice.name) }, startup());
}

function proxied(): Promise<RawClient> {
  return RawClient.connect({ host: '127.0.0.1', port: svc.pgPort, database: 'repobase', user: alice.name, password: alice.key }, startup());
}

/** The answers to entry `name` on a new connection of `connect`, from the same starting point (the user's name as `<user>`). */
async function answers(connect: () => Promise<RawClient>, name: string): Promise<Answer[]> {
  const client = await connect();
  try {
    expect(await client.send([q('CREATE TEMP TABLE t (id int)')], 1)).toEqual(['C CREATE TABLE', 'Z I']);
    const entry = corpus(repo)[name]!;
    for (const sql of entry.before ?? []) expect((await client.send([q(sql)], 1)).at(-1)).toBe('Z I');
    return (await client.sendBytes(entry.bytes, entry.readies)).map((a) => a.replaceAll(alice.name, '<user>'));
  } finally {
    client.close();
  }
}

describe.concurrent('the same bytes get the same answers from Postgres and from repobase', () => {
  it('lists differences only of entries in the corpus', () => {
    const names = Object.keys(corpus('x'));
    expect([...Object.keys(DIFFERENCES), ...Object.keys(KNOWN)].filter((n) => !names.includes(n))).toEqual([]);
  });

  for (const name of Object.keys(corpus('x'))) {
    it(name, async () => {
      const [want, got] = await Promise.all([answers(direct, name), answers(proxied, name)]);
      const differs = DIFFERENCES[name] ?? KNOWN[name];
      if (differs) {
        expect({ postgres: want, repobase: got }).toEqual(differs);
      } else {
        expect(got).toEqual(want);
      }
    });
  }
});
