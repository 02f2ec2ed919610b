import { describe, expect, it } from 'vitest';
import { cellText, createRenderer, splitRow } from '../../../src/cli/client-render.js';

describe('the CLI row splitter', () => {
  it('keeps every top-level value as its exact JSON text', () => {
    expect(splitRow('[9007199254740993,"a,b",null,"",true,[1,[2,"]"]],{"k":"}"},0.1000000000000000055511151231257827]')).toEqual([
      '9007199254740993',
      '"a,b"',
      'null',
      '""',
      'true',
      '[1,[2,"]"]]',
      '{"k":"}"}',
      '0.1000000000000000055511151231257827',
    ]);
    expect(splitRow('[]')).toEqual([]);
    expect(splitRow('["say \\"hi\\", ok"]')).toEqual(['"say \\"hi\\", ok"']);
  });

  it('turns values into cells: strings unquoted, NULL null, the rest as written', () => {
    expect(cellText('"x\\ny"')).toBe('x\ny');
    expect(cellText('null')).toBeNull();
    expect(cellText('""')).toBe('');
    expect(cellText('12.50')).toBe('12.50');
  });

  it('renders CSV and JSON from NDJSON lines without losing digits', () => {
    const out: string[] = [];
    const head = '{"query_string":"q","fields":{"n":"BIGINT","t":"TEXT"}}';
    const csv = createRenderer('csv', JSON.parse(head) as never, head, (s) => out.push(s), () => undefined);
    csv.row('[9007199254740993,null]');
    csv.row('[1,""]');
    csv.end({ command: 'SELECT', row_count: 2 });
    expect(out.join('')).toBe('n,t\n9007199254740993,\n1,""\n');
    out.length = 0;
    const json = createRenderer('json', JSON.parse(head) as never, head, (s) => out.push(s), () => undefined);
    json.row('[9007199254740993,null]');
    json.end({ command: 'SELECT', row_count: 1 });
    expect(out.join('')).toBe('{"query_string":"q","fields":{"n":"BIGINT","t":"TEXT"},"data":[[9007199254740993,null]],"command":"SELECT","row_count":1}\n');
  });
});
