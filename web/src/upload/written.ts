/**
 * How a column's values are written, as the preview reports it (`written`, `example`,
 * `ambiguous`; see docs/upload.md): the words the wizard shows under a column's type, and the
 * layout it sends back with the type so that every value is read the way it was found written.
 */
import type { Column } from './requests.ts';

const DATE_TYPES = new Set(['DATE', 'TIMESTAMP', 'TIMESTAMP WITHOUT TIME ZONE', 'TIMESTAMP WITH TIME ZONE']);
const NUMBER_TYPE = /^(BIGINT|INTEGER|DOUBLE PRECISION|NUMERIC(\(.*\))?)$/;

/** The layout of numbers with thousands separators, as the server names it. */
const GROUPED = '1,234,567';

/** Whether a column of `type` reads values written in `layout` (a date layout, or thousands separators). */
export function reads(type: string, layout: string): boolean {
  return layout === GROUPED ? NUMBER_TYPE.test(type) : DATE_TYPES.has(type);
}

/** What values of `type` are called: "dates", "timestamps", "numbers". */
function noun(type: string): string {
  if (type === 'DATE') return 'dates';
  if (type === 'TIMESTAMP WITH TIME ZONE') return 'timestamps with offsets';
  return DATE_TYPES.has(type) ? 'timestamps' : 'numbers';
}

/** The line under a column's type: how its values are written, as the chosen type reads them; or why it is TEXT. */
export function writtenNote(column: Column, type: string, layout: string | undefined): string | null {
  if (column.written && column.example && reads(type, column.written)) return `${noun(type)}, written ${column.example}`;
  if (column.written && column.example && type === 'TEXT') return `kept as written (${column.example})`;
  if (column.ambiguous && layout && reads(type, layout)) return `dates, written ${layout}`;
  if (column.ambiguous && type === 'TEXT') return `dates with no day over 12: ${column.ambiguous.join(' or ')} cannot be told apart, so TEXT (choose DATE to say which)`;
  return null;
}

/** The layout to send with a column's type: the one found, or the one chosen for an ambiguous column, when the type reads it. */
export function layoutToSend(column: Column, type: string, chosen: string | undefined): string | undefined {
  const layout = column.written ?? (column.ambiguous ? chosen : undefined);
  return layout !== undefined && reads(type, layout) ? layout : undefined;
}
