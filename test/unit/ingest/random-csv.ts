/** Random CSV files for the differential tests of the direct load (unit and integration). */

/** A small deterministic generator (tests must be reproducible). */
export function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x / 2 ** 32;
  };
}

const CELLS = ['1', '-7', '2.5', '1e3', '007', '99999999999999999999', 'true', 'No', '2024-02-29', '2024-03-04 05:06:07', '2024-03-04T05:06:07Z', '12/31/2024', '01/02/2024', '{"a": 1}', '[1,2]', 'x', 'Paris', 'é', ' 42', 'NA', '', '""', '"a,b"', '"x""y"', '"line\nbreak"', '"cr\r\nlf"', '"2024-01-01"', '"{""k"": [1]}"', '"1"', '"NA"', '"1,234"', '"-1,234.5"', 'Jan 31 2000', '31/01/2000 1:30 PM', '2015/01/01 01:00:00', '01-Jan-2000', '"June 1, 2000"', '31.12.1999 23:59 +01:00'];

/**
 * A random CSV: 1–4 columns each drawing from a few cells (so types survive and headers are
 * found), LF, CRLF or CR line ends, sometimes a header, blank lines, a ragged row, no final line
 * end or an unclosed quote.
 */
export function randomCsv(next: () => number, delimiter: string): string {
  const width = 1 + Math.floor(next() * 4);
  const eol = ['\n', '\r\n', '\r'][Math.floor(next() * 3)]!;
  // Columns draw from a few cells each, so that types survive and headers are found.
  const pools = Array.from({ length: width }, () => Array.from({ length: 1 + Math.floor(next() * 3) }, () => CELLS[Math.floor(next() * CELLS.length)]!));
  const lines: string[] = [];
  if (next() < 0.6) lines.push(Array.from({ length: width }, (_, i) => (next() < 0.9 ? `col${i}` : '"quoted, name"')).join(delimiter));
  const n = Math.floor(next() * 12);
  for (let r = 0; r < n; r++) {
    if (next() < 0.08) lines.push('');
    const w = next() < 0.04 ? width + 1 : width;
    lines.push(Array.from({ length: w }, (_, i) => pools[i % width]![Math.floor(next() * pools[i % width]!.length)]!.replaceAll(',', delimiter === ',' ? ',' : delimiter)).join(delimiter));
  }
  let text = lines.join(eol) + (next() < 0.7 ? eol : '');
  if (next() < 0.05) text += eol;
  if (next() < 0.03) text = text.replace(/\r?\n$/, '"unclosed\n');
  return text;
}
