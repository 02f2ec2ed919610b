import { describe, expect, it } from 'vitest';
import { createWriter, negotiateFormat } from '../../../src/http/result-formats.js';
import type { Column } from '../../../src/upstream/query-run.js';

const int: Column['type'] = { name: 'INTEGER', encoding: { kind: 'number' } };
const text: Column['type'] = { name: 'TEXT', encoding: { kind: 'text' } };

describe('result formats', () => {
  it('lists fields in the order of the columns, names that look like indexes too', () => {
    const columns: Column[] = [
      { name: 'b', type: int },
      { name: '1', type: text },
      { name: 'say "hi"', type: int },
    ];
    const w = createWriter('json', 'SELECT …', columns);
    const answer = w.head() + w.rows([['2', 'x', null]]) + w.end({ command: 'SELECT', rowCount: 1, truncated: false });
    expect(answer).toBe('{"query_string":"SELECT …","fields":{"b":"INTEGER","1":"TEXT","say \\"hi\\"":"INTEGER"},"data":[[2,"x",null]],"command":"SELECT","row_count":1}\n');
    expect(JSON.parse(answer).data).toEqual([[2, 'x', null]]);
    const nd = createWriter('ndjson', 'q', columns).head();
    expect(nd).toBe('{"query_string":"q","fields":{"b":"INTEGER","1":"TEXT","say \\"hi\\"":"INTEGER"}}\n');
  });

  it('answers fields {} for a statement without columns', () => {
    const w = createWriter('json', 'DELETE', []);
    expect(w.head() + w.end({ command: 'DELETE', rowCount: 0, truncated: false })).toBe('{"query_string":"DELETE","fields":{},"data":[],"command":"DELETE","row_count":0}\n');
  });

  it.each([
    [undefined, 'json'],
    ['*/*', 'json'],
    ['application/json', 'json'],
    ['text/csv', 'csv'],
    ['Application/X-NDJSON; q=1', 'ndjson'],
    ['text/html, text/csv;q=0.9', 'csv'],
    ['image/png', 'json'],
  ] as const)('negotiates %s as %s', (accept, format) => {
    expect(negotiateFormat(accept)).toBe(format);
  });
});
