/**
 * The scanner and the forwarder together, as the direct load drives them: the bytes sent to
 * COPY are the upload less its blank lines and header, with the values to rewrite replaced —
 * wherever the chunks are cut (every single cut, and every pair of cuts, of a small file).
 */
import { describe, expect, test } from 'vitest';
import { rewriterOf } from '../../../src/ingest/convert.js';
import { CsvScan } from '../../../src/ingest/csv-scan.js';
import { Forwarder } from '../../../src/ingest/forward.js';
import { GROUPED } from '../../../src/ingest/written.js';

const REWRITERS = [undefined, rewriterOf('double precision', { layout: GROUPED }), rewriterOf('timestamp without time zone', { layout: 'DD/MM/YYYY' })];

/** What the COPY gets for `text` cut at `cuts` (offsets). */
async function forwarded(text: string, cuts: number[], opts: { header?: boolean; delimiter?: string; nullText?: string } = {}): Promise<string> {
  const { header = true, delimiter = ',', nullText = '' } = opts;
  const buf = Buffer.from(text);
  const scan = new CsvScan(delimiter.charCodeAt(0), Buffer.from(nullText), false);
  scan.rewrite(REWRITERS, !header);
  const sent: Buffer[] = [];
  const out = new Forwarder(header, async (bytes) => void sent.push(Buffer.from(bytes)));
  let base = 0;
  for (const end of [...cuts, buf.length]) {
    const chunk = buf.subarray(base, end);
    scan.feed(chunk);
    out.skip(scan.takeSkips(), scan.takeReplacements());
    expect(await out.forward(chunk, base, scan.decidedTo)).toBe(true);
    base = end;
  }
  scan.end();
  out.skip(scan.takeSkips(), scan.takeReplacements());
  expect(await out.forward(Buffer.alloc(0), buf.length)).toBe(true);
  return Buffer.concat(sent).toString();
}

const FILE = 'id,amount,at\n1,"1,234.5",31/01/2000 13:30\n\n2,999,1/2/2000\n3,"-12,345",29.2.2000 1:30 PM\n4,,"5/6/2000"\n5,x,7/8/2000';
const SENT = '1,"1234.5",2000-01-31 13:30\n2,999,2000-02-01\n3,"-12345",2000-02-29 1:30 PM\n4,,"2000-06-05"\n5,x,2000-08-07';

describe('the bytes COPY gets', () => {
  test('whole: header and blank line left out, values rewritten in place, quotes and line ends kept', async () => {
    expect(await forwarded(FILE, [])).toBe(SENT);
  });

  test('cut once anywhere', async () => {
    for (let a = 1; a < FILE.length; a++) expect(await forwarded(FILE, [a]), `cut at ${a}`).toBe(SENT);
  });

  test('cut twice anywhere', async () => {
    for (let a = 1; a < FILE.length; a++) for (let b = a + 1; b < FILE.length; b++) expect(await forwarded(FILE, [a, b]), `cut at ${a}, ${b}`).toBe(SENT);
  });

  test('CRLF line ends, cut anywhere', async () => {
    const crlf = FILE.replaceAll('\n', '\r\n');
    for (let a = 1; a < crlf.length; a++) expect(await forwarded(crlf, [a]), `cut at ${a}`).toBe(SENT.replaceAll('\n', '\r\n'));
  });

  test('no header: the first record is data and rewritten too', async () => {
    expect(await forwarded('1,"2,000",13/01/2000\n', [5], { header: false })).toBe('1,"2000",2000-01-13\n');
  });

  test('an unquoted value rewritten into the NULL text is quoted, so it stays a value', async () => {
    expect(await forwarded('id;n;at\n1;1,000;\n2;1000;1/1/2000\n', [3, 11], { delimiter: ';', nullText: '1000' })).toBe('1;"1000";\n2;1000;2000-01-01\n');
  });
});
