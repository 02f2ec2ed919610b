/**
 * Every inference rule and the csv-spectrum edge cases, through the real upload endpoint into a
 * real table: the column types are read back from the catalog (format_type), values with SQL.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { columnsOf, fixture, leftovers, rows, upload } from './ingest-helpers.js';

let svc: TestService;
let alice: { name: string; key: string };
let repo: string;
beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  repo = `${alice.name}/files`;
  await svc.control.createRepo(repo);
});
afterAll(() => svc.stop());

async function load(file: string, fields: Record<string, string | string[]> = {}): Promise<{ types: Record<string, string>; data: (string | null)[][]; table: string }> {
  const table = (fields.table_name as string | undefined) ?? file.replace(/\.[^.]+$/, '');
  const answer = await upload(svc, alice.key, { repo, ...fields }, { name: file, data: fixture(file) });
  expect(answer.body.error ?? null, JSON.stringify(answer.body)).toBeNull();
  expect(answer.status).toBe(200);
  expect(answer.body.status).toBe('DONE');
  const types = await columnsOf(svc, repo, table);
  const data = await rows(svc, `SELECT * FROM "${repo}"."${table}"`);
  return { types, data, table };
}

describe('inference rules', () => {
  test('BOOLEAN: true/false, t/f, yes/no in any case; 0/1 stay numbers', async () => {
    const { types, data } = await load('booleans.csv');
    expect(types).toEqual({ flag: 'boolean', mixed_case: 'boolean', zero_one: 'bigint' });
    expect(data).toEqual([
      ['t', 't', '0'],
      ['f', 'f', '1'],
      ['t', 't', '1'],
      ['f', 'f', '0'],
      [null, 't', null],
    ]);
  });

  test('BIGINT within int8, NUMERIC beyond, leading zeros stay TEXT', async () => {
    const { types, data } = await load('integers.csv');
    expect(types).toEqual({ id: 'bigint', zip: 'text', big: 'bigint', huge: 'numeric', negative: 'bigint' });
    expect(data[0]).toEqual(['1', '02134', '9223372036854775807', '92233720368547758070', '-5']);
    expect(data[2]![3]).toBe('-123456789012345678901234567890');
  });

  test('DOUBLE PRECISION for decimals and exponents; thousands separators read as such; currency stays TEXT', async () => {
    const { types, data } = await load('decimals.csv');
    expect(types).toEqual({ price: 'double precision', exponent: 'double precision', mixed: 'double precision', thousands: 'bigint', currency: 'text', with_big: 'numeric' });
    expect(data[0]).toEqual(['1.5', '1000', '1', '1234', '$5', '1.5']);
    expect(data[1]![5]).toBe('99999999999999999999');
  });

  test('DATE: ISO, or one unambiguous layout shared by every value', async () => {
    const { types, data } = await load('dates.csv');
    expect(types).toEqual({ iso: 'date', us: 'date', eu: 'date', ambiguous: 'text', dotted: 'date', mixed: 'text' });
    expect(data[0]!.slice(0, 3)).toEqual(['2024-01-31', '2024-12-31', '2024-12-31']);
    expect(data[2]!.slice(1, 3)).toEqual(['2024-03-05', '2024-05-13']);
    expect(data[1]![4]).toBe('2024-02-01');
  });

  test('TIMESTAMP without, TIMESTAMP WITH TIME ZONE with an offset; dates mixed with timestamps are TIMESTAMP', async () => {
    const { types, data } = await load('timestamps.csv');
    expect(types).toEqual({
      local: 'timestamp without time zone',
      with_offset: 'timestamp with time zone',
      utc: 'timestamp with time zone',
      date_and_time: 'timestamp without time zone',
      bad_hour: 'text',
    });
    expect(data[0]![0]).toBe('2024-03-04 05:06:07');
    expect(data[1]![0]).toBe('2024-03-04 05:06:07.123456');
    expect(data[0]![3]).toBe('2024-03-04 00:00:00');
  });

  test('JSONB for JSON objects and arrays; a JSON scalar in a cell is not JSON', async () => {
    const { types, data } = await load('json-cells.csv');
    expect(types).toEqual({ obj: 'jsonb', arr: 'jsonb', not_json: 'text', scalar: 'bigint' });
    expect(data[0]!.slice(0, 2)).toEqual(['{"a": 1, "b": [true, null]}', '[1, 2, 3]']);
  });

  test('empty unquoted is NULL, "" is an empty string; null_values replace the default', async () => {
    const plain = await load('nulls.csv');
    expect(plain.types).toEqual({ a: 'text', b: 'text', c: 'text' });
    expect(plain.data).toEqual([
      [null, '', 'x'],
      ['NA', 'NA', null],
    ]);
    const na = await load('nulls.csv', { table_name: 'nulls NA', null_values: ['NA', ''] });
    expect(na.data).toEqual([
      [null, '', 'x'],
      [null, 'NA', null],
    ]);
  });

  test('header names kept verbatim (trimmed), duplicates made unique, blanks become column_<n>', async () => {
    const { types } = await load('headers.csv', { header: 'first_row' });
    expect(Object.keys(types)).toEqual(['name', 'name_2', 'column_3', 'name_3', 'Name']);
  });

  test('header auto-detection: numbers under text names; all-text files by repetition; none names column_<n>', async () => {
    expect(Object.keys((await load('no-header.csv')).types)).toEqual(['column_1', 'column_2', 'column_3']);
    expect((await load('no-header.csv', { table_name: 'nh typed' })).types).toEqual({ column_1: 'bigint', column_2: 'date', column_3: 'boolean' });
    const allText = await load('all-text.csv');
    expect(Object.keys(allText.types)).toEqual(['city', 'country']);
    expect(allText.data).toEqual([
      ['Paris', 'France'],
      ['Rome', 'Italy'],
    ]);
    const repeated = await load('all-text-no-header.csv');
    expect(Object.keys(repeated.types)).toEqual(['column_1', 'column_2']);
    expect(repeated.data).toHaveLength(2);
    const forced = await load('all-text.csv', { table_name: 'forced none', header: 'none' });
    expect(forced.data).toHaveLength(3);
  });
});

describe('csv-spectrum and formats', () => {
  test('quoted commas', async () => {
    const { types, data } = await load('comma_in_quotes.csv');
    expect(types.zip).toBe('text');
    expect(data).toEqual([['John', 'Doe', '120 any st.', 'Anytown, WW', '08123']]);
  });

  test('quoted newlines', async () => {
    const { data } = await load('newlines.csv');
    expect(data).toEqual([
      ['1', '2', '3'],
      ['Once upon \na time', '5', '6'],
      ['7', '8', '9'],
    ]);
  });

  test('escaped quotes and empty fields', async () => {
    expect((await load('escaped_quotes.csv')).data).toEqual([
      ['1', 'ha "ha" ha'],
      ['3', '4'],
    ]);
    const empty = await load('empty_fields.csv');
    expect(empty.types).toEqual({ a: 'bigint', b: 'text', c: 'text' });
    expect(empty.data[0]).toEqual(['1', '', '']);
  });

  test('CRLF line ends, a UTF-8 BOM, unicode', async () => {
    expect((await load('crlf.csv')).data).toEqual([
      ['1', 'x\r\ny'],
      ['3', '4'],
    ]);
    const bom = await load('bom.csv');
    expect(bom.types).toEqual({ id: 'bigint', name: 'text' });
    expect(bom.data).toEqual([['1', 'café']]);
    const uni = await load('unicode.csv');
    expect(uni.data).toEqual([
      ['Zoë', '😀', '1'],
      ['Σωκράτης', '日本語', '2'],
    ]);
  });

  test('delimiter detection (semicolon, pipe in a .txt), TSV', async () => {
    const semi = await load('semicolon.csv');
    expect(semi.types).toEqual({ a: 'bigint', b: 'text', c: 'text' });
    expect(semi.data[0]).toEqual(['1', '2,5', 'x']);
    const pipe = await load('sales data.txt');
    expect(pipe.table).toBe('sales data');
    expect(pipe.types).toEqual({ region: 'text', total: 'bigint' });
    const tsv = await load('data.tsv');
    expect(tsv.data).toEqual([
      ['1', 'Alice', 'has, commas'],
      ['2', 'Bob', 'quoted'],
    ]);
  });

  test('declared and byte-order-marked encodings are converted', async () => {
    const latin1 = await load('latin1.csv', { encoding: 'latin1' });
    expect(latin1.data[1]).toEqual(['2', 'Zürich']);
    const utf16 = await load('utf16.csv');
    expect(utf16.data).toEqual([['1', 'Orléans']]);
  });

  test('NDJSON: keys become columns, later keys add columns, nested JSON is JSONB, big numbers exact', async () => {
    const { types, data } = await load('records.ndjson');
    expect(types).toEqual({ id: 'bigint', name: 'text', tags: 'jsonb', meta: 'jsonb', extra: 'numeric' });
    expect(data[1]).toEqual(['2', 'b', null, null, '12345678901234567890123']);
    expect(data[2]).toEqual(['3', null, '[]', null, null]);
  });

  test('JSON array of objects', async () => {
    const { types, data } = await load('records.json', { table_name: 'records json' });
    expect(types).toEqual({ id: 'bigint', price: 'double precision', when: 'date', ok: 'boolean', nested: 'jsonb' });
    expect(data[1]).toEqual(['2', '2', '2024-01-02', 'f', '{"a": [1, {"b": null}]}']);
  });

  test('XLSX: the first sheet, dates, formulas and rich text', async () => {
    const { types, data } = await load('orders.xlsx');
    expect(types).toEqual({ id: 'bigint', customer: 'text', amount: 'double precision', ordered: 'date', paid: 'boolean', total: 'bigint' });
    expect(data).toEqual([
      ['1', 'Alice', '10.5', '2024-01-31', 't', '21'],
      ['2', 'Bob', '3', '2024-02-29', 'f', '6'],
      ['3', 'Carol', null, null, null, null],
    ]);
    expect(await leftovers(svc)).toEqual([]);
  });
});
