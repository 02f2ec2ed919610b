import { describe, expect, it } from 'vitest';
import { AUDIT_SQL_MAX_CHARS, auditSql, redactLiterals } from '../../../src/control/audit-text.js';
import { isDdlTag } from '../../../src/control/audit.js';
import { parseSince } from '../../../src/control/since.js';

describe('auditSql', () => {
  it.each([
    [`ALTER ROLE alice PASSWORD 'hunter2'`, `ALTER ROLE alice PASSWORD '***'`],
    [`alter user bob with encrypted password 'SCRAM-SHA-256$4096:abc'`, `alter user bob with encrypted password '***'`],
    [`CREATE USER MAPPING FOR alice SERVER s OPTIONS (user 'a', password 'p''q')`, `CREATE USER MAPPING FOR alice SERVER s OPTIONS (user '***', password '***')`],
    [`SELECT dblink_connect(E'host=x password=\\'s3\\'')  -- secret`, `SELECT dblink_connect(E'***')  -- secret`],
    [`SELECT $$password is x$$, $t$y$t$`, `SELECT '***', '***'`],
    [`SELECT 'nothing to hide'`, `SELECT 'nothing to hide'`],
    [`SELECT "password" FROM t WHERE "it's" = 'v'`, `SELECT "password" FROM t WHERE "it's" = '***'`],
    [`ALTER ROLE a PASSWORD 'never closed`, `ALTER ROLE a PASSWORD '***'`],
  ])('%s', (sql, stored) => {
    expect(auditSql(sql)).toBe(stored);
  });

  it('cuts anything shaped like an API key to its public id, and long text to the bound', () => {
    const key = `rb_0123456789ab_${'x'.repeat(43)}`;
    expect(auditSql(`SELECT '${key}'`)).toBe(`SELECT 'rb_0123456789ab_***'`);
    const long = auditSql(`SELECT ${'y'.repeat(10 * AUDIT_SQL_MAX_CHARS)}`);
    expect(long.length).toBe(AUDIT_SQL_MAX_CHARS);
    expect(long.endsWith('…')).toBe(true);
    // A key the bound cuts short keeps none of its secret; a literal it leaves open is redacted to the end.
    const cutKey = auditSql(`SELECT ${'z'.repeat(AUDIT_SQL_MAX_CHARS - 30)} 'rb_0123456789ab_${'s'.repeat(43)}'`);
    expect(cutKey).toMatch(/rb_0123456789ab_\*\*\*…$/);
    expect(cutKey).not.toContain('sss');
    expect(auditSql(`ALTER ROLE a PASSWORD '${'p'.repeat(2 * AUDIT_SQL_MAX_CHARS)}'`)).toBe(`ALTER ROLE a PASSWORD '***'`);
  });

  it('redactLiterals leaves comments and quoted identifiers alone', () => {
    expect(redactLiterals(`/* 'a' */ SELECT "x'y", 'z' -- 'w'`)).toBe(`/* 'a' */ SELECT "x'y", '***' -- 'w'`);
  });
});

describe('isDdlTag', () => {
  it.each([
    ['CREATE TABLE', true],
    ['ALTER TABLE', true],
    ['DROP INDEX', true],
    ['COMMENT', true],
    ['GRANT', true],
    ['REVOKE', true],
    ['SELECT 7', false],
    ['INSERT 0 1', false],
    ['COPY 3', false],
    ['CREATED', false],
  ])('%s → %s', (tag, ddl) => expect(isDdlTag(tag)).toBe(ddl));
});

describe('parseSince', () => {
  const now = Date.UTC(2026, 10, 24, 12, 0, 0);
  it('takes spans back from now and ISO times', () => {
    expect(parseSince('1h', now).toISOString()).toBe('2026-11-24T11:00:00.000Z');
    expect(parseSince('7d', now).toISOString()).toBe('2026-11-17T12:00:00.000Z');
    expect(parseSince('30m', now).toISOString()).toBe('2026-11-24T11:30:00.000Z');
    expect(parseSince('2026-11-20T05:00:00Z', now).toISOString()).toBe('2026-11-20T05:00:00.000Z');
    expect(parseSince('2026-11-20', now).toISOString()).toBe('2026-11-20T00:00:00.000Z');
  });
  it.each(['', 'yesterday', '1y', '-1h', '2026-13-45', '1h; DROP TABLE x'])('refuses %j with 22007', (text) => {
    expect(() => parseSince(text, now)).toThrow(expect.objectContaining({ code: '22007' }));
  });
});
