import { describe, expect, it } from 'vitest';
import { misread } from '../../../src/policy/index.js';

const reading = (scs: string, encoding: string) =>
  new Map([
    ['standard_conforming_strings', scs],
    ['client_encoding', encoding],
  ]);

describe('misread: text Postgres could read differently with the reading settings it reported', () => {
  it('with standard_conforming_strings off, refuses text with a backslash, naming the setting', () => {
    const d = misread("SELECT 'a\\' AS v", reading('off', 'UTF8'));
    expect(d).toMatchObject({ kind: 'deny', error: { code: '0A000' } });
    expect(d?.kind === 'deny' && d.error.message).toContain('standard_conforming_strings is off');
    expect(d?.kind === 'deny' && d.error.hint).toContain('RESET standard_conforming_strings');
    expect(misread("SELECT 'a' AS v, 'é'", reading('off', 'UTF8'))).toBeUndefined();
  });

  it('in an encoding the policy does not read, refuses text beyond ASCII', () => {
    const d = misread("SELECT 'é'", reading('on', 'SJIS'));
    expect(d?.kind === 'deny' && d.error.message).toContain('client_encoding is SJIS');
    expect(misread("SELECT 'a\\'", reading('on', 'SJIS'))).toBeUndefined();
    expect(misread('SELECT 1', reading('on', 'SJIS'))).toBeUndefined();
  });

  it('lets everything through while the settings read as the policy does (SQL_ASCII and UTF8 alike)', () => {
    expect(misread("SELECT 'a\\', 'é'", reading('on', 'UTF8'))).toBeUndefined();
    expect(misread("SELECT 'a\\', 'é'", reading('on', 'SQL_ASCII'))).toBeUndefined();
  });
});
