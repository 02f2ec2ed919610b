import { describe, expect, it } from 'vitest';
import { csvField, encodeArray, encodeRow, encodeValue } from '../../../src/upstream/query-encode.js';
import { parseCommandTag } from '../../../src/upstream/command-tag.js';
import { upperUnquoted, type ValueEncoding } from '../../../src/upstream/query-types.js';

const num: ValueEncoding = { kind: 'number' };
const text: ValueEncoding = { kind: 'text' };
const bool: ValueEncoding = { kind: 'bool' };
const json: ValueEncoding = { kind: 'json' };
const arrayOf = (element: ValueEncoding, delimiter = ','): ValueEncoding => ({ kind: 'array', delimiter, element });

describe('value encoding', () => {
  it.each([
    ['9007199254740993', '9007199254740993'],
    ['0.1000000000000000055511151231257827', '0.1000000000000000055511151231257827'],
    ['-12.50', '-12.50'],
    ['1e+100', '1e+100'],
    ['1.5e-07', '1.5e-07'],
    ['-0', '-0'],
    ['NaN', '"NaN"'],
    ['Infinity', '"Infinity"'],
    ['-Infinity', '"-Infinity"'],
  ])('number %s → %s, the digits as printed', (input, output) => {
    expect(encodeValue(input, num)).toBe(output);
  });

  it('keeps digits that a float round trip would lose', () => {
    const row = encodeRow(['9007199254740993', '0.1000000000000000055511151231257827'], [num, num]);
    expect(row).toBe('[9007199254740993,0.1000000000000000055511151231257827]');
    expect(String(JSON.parse(row)[0])).not.toBe('9007199254740993'); // what JSON.parse would have done
  });

  it('NULL is null, the empty string stays a string', () => {
    expect(encodeValue(null, text)).toBe('null');
    expect(encodeValue('', text)).toBe('""');
    expect(encodeValue(null, num)).toBe('null');
  });

  it('booleans, json and text', () => {
    expect(encodeValue('t', bool)).toBe('true');
    expect(encodeValue('f', bool)).toBe('false');
    expect(encodeValue('{"a": [1, 2.50]}', json)).toBe('{"a": [1, 2.50]}');
    expect(encodeValue('2024-01-02 03:04:05+00', text)).toBe('"2024-01-02 03:04:05+00"');
    expect(encodeValue('say "hi"\n', text)).toBe('"say \\"hi\\"\\n"');
  });

  it.each<[string, ValueEncoding, string]>([
    ['{1,2,3}', num, '[1,2,3]'],
    ['{}', num, '[]'],
    ['{{1,2},{3,4}}', num, '[[1,2],[3,4]]'],
    ['{NULL,1}', num, '[null,1]'],
    ['[0:1]={7,8}', num, '[7,8]'],
    ['{a,"b c","d\\"e","f\\\\g","NULL",NULL,""}', text, '["a","b c","d\\"e","f\\\\g","NULL",null,""]'],
    ['{t,f}', bool, '[true,false]'],
    ['{"{\\"a\\": 1}",2}', json, '[{"a": 1},2]'],
    ['{9007199254740993,NaN}', num, '[9007199254740993,"NaN"]'],
  ])('array %s', (input, element, output) => {
    expect(encodeArray(input, ',', element)).toBe(output);
    expect(encodeValue(input, arrayOf(element))).toBe(output);
  });

  it('uses the type delimiter (box[] prints with ;)', () => {
    expect(encodeArray('{(1,1),(0,0);(2,2),(1,1)}', ';', text)).toBe('["(1,1),(0,0)","(2,2),(1,1)"]');
  });

  it('returns text that is not an array literal as a string instead of guessing', () => {
    expect(encodeArray('{1,2', ',', num)).toBe('"{1,2"');
    expect(encodeArray('nonsense', ',', num)).toBe('"nonsense"');
  });
});

describe('CSV fields', () => {
  it('quotes what needs it; NULL is empty, the empty string is ""', () => {
    expect(csvField(null)).toBe('');
    expect(csvField('')).toBe('""');
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField(' padded')).toBe('" padded"');
  });
});

describe('command tags and column names', () => {
  it.each([
    ['SELECT 5', 'SELECT', 5],
    ['INSERT 0 3', 'INSERT', 3],
    ['UPDATE 10', 'UPDATE', 10],
    ['CREATE TABLE', 'CREATE TABLE', null],
    ['ALTER TABLE', 'ALTER TABLE', null],
    ['COPY 2', 'COPY', 2],
    ['MERGE 0', 'MERGE', 0],
    ['FETCH 12345678901', 'FETCH', 12345678901],
    ['BEGIN', 'BEGIN', null],
    ['5', '5', null],
    ['', '', null],
  ])('%s', (tag, command, rowCount) => {
    expect(parseCommandTag(tag)).toEqual({ command, rowCount });
  });

  it('upper-cases type names outside quotes only', () => {
    expect(upperUnquoted('numeric(10,2)')).toBe('NUMERIC(10,2)');
    expect(upperUnquoted('timestamp with time zone')).toBe('TIMESTAMP WITH TIME ZONE');
    expect(upperUnquoted('"alice/Sales".mood[]')).toBe('"alice/Sales".MOOD[]');
  });
});
