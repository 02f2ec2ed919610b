/** Aligned text table, psql-like, for terminal output. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ').trimEnd();
  const sep = widths.map((w) => '-'.repeat(w)).join('-+-');
  const count = `(${rows.length} ${rows.length === 1 ? 'row' : 'rows'})`;
  return [line(headers), sep, ...rows.map(line), count].join('\n') + '\n';
}
