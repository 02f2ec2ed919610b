import { describe, expect, it } from 'vitest';
import { statusForSqlState } from '../../../src/http/errors.js';
import { negotiateFormat } from '../../../src/http/result-formats.js';

describe('HTTP status by SQLSTATE', () => {
  it.each([
    ['28000', 401],
    ['28P01', 401],
    ['42501', 403],
    ['3F000', 404],
    ['42P01', 404],
    ['42601', 400],
    ['42703', 400],
    ['22012', 400],
    ['22P02', 400],
    ['23505', 409],
    ['23503', 409],
    ['42P07', 409],
    ['54000', 413],
    ['53400', 429],
    ['57014', 504],
    ['08006', 503],
    ['53300', 503],
    ['57P01', 503],
    ['XX000', 500],
    ['58030', 500],
  ])('%s → %i', (code, status) => {
    expect(statusForSqlState(code)).toBe(status);
  });
});

describe('answer format from Accept', () => {
  it.each([
    [undefined, 'json'],
    ['*/*', 'json'],
    ['application/json', 'json'],
    ['text/csv', 'csv'],
    ['text/csv; charset=utf-8', 'csv'],
    ['application/x-ndjson', 'ndjson'],
    ['text/html, text/csv;q=0.9', 'csv'],
    ['application/json, text/csv', 'json'],
  ])('%s → %s', (accept, format) => {
    expect(negotiateFormat(accept)).toBe(format);
  });
});
