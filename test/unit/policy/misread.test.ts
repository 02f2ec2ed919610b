import { describe, expect, it } from 'vitest';
import { misread } from '../../../src/policy/index.js';

describe('misread: text Postgres could read differently once a reading setting changed', () => {
  const scs = new Set(['standard_conforming_strings']);
  const encoding = new Set(['client_encoding']);

  it('with standard_conforming_strings changed, refuses text with a backslash, naming the setting', () => {
    const d = misread("SELECT 'a\\' AS v", scs);
    expect(d).toMatchObject({ kind: 'deny', error: { code: '0A000' } });
    expect(d?.kind === 'deny' && d.error.hint).toContain('RESET standard_conforming_strings');
    expect(misread("SELECT 'a' AS v, 'é'", scs)).toBeUndefined();
  });

  it('with client_encoding changed, refuses text beyond ASCII', () => {
    const d = misread("SELECT 'é'", encoding);
    expect(d?.kind === 'deny' && d.error.message).toContain('client_encoding');
    expect(misread("SELECT 'a\\'", encoding)).toBeUndefined();
    expect(misread('SELECT 1', encoding)).toBeUndefined();
  });

  it('lets everything through when nothing changed', () => {
    expect(misread("SELECT 'a\\', 'é'", new Set())).toBeUndefined();
  });
});
