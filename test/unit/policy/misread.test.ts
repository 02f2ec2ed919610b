import { describe, expect, it } from 'vitest';
import { misread } from '../../../src/policy/index.js';

const reading = (scs: string, encoding: string) =>
  new Map([
    ['standard_conforming_strings', scs],
    ['client_encoding', encoding],
  ]);

describe('misread: text Postgres could read differently with the reading settings it reported', () => {
  it('in an encoding repobase cannot decode (set by a function), refuses text beyond ASCII, naming it', () => {
    const d = misread("SELECT 'é'", reading('on', 'EUC_TW'));
    expect(d).toMatchObject({ kind: 'deny', error: { code: '0A000' } });
    expect(d?.kind === 'deny' && d.error.message).toContain('client_encoding is EUC_TW');
    expect(d?.kind === 'deny' && d.error.hint).toContain('SET client_encoding TO UTF8');
    expect(misread("SELECT 'a\\'", reading('on', 'EUC_TW'))).toBeUndefined();
    expect(misread('SELECT 1', reading('on', 'EUC_TW'))).toBeUndefined();
  });

  it('lets everything through in an encoding the front ends decode (they judge the decoded text, with standard_conforming_strings as it is)', () => {
    for (const encoding of ['UTF8', 'SQL_ASCII', 'LATIN1', 'SJIS']) expect(misread("SELECT 'a\\', 'é'", reading('off', encoding))).toBeUndefined();
  });
});
